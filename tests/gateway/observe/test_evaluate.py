"""eval: each rule caught on a crafted answer, each compliant answer passed, and whole
runs through the real engine against scripted fake providers (no network, no sleeping)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.clock import FixedRandom, VirtualClock
from gateway.config import Config, Deployment, Policy
from gateway.engine.loop import Engine
from gateway.model import ErrorKind, ProviderKind, Reply, Request
from gateway.observe.evaluate import (
    AnswerStatus,
    EvalQuestion,
    QuestionsError,
    Rule,
    Tally,
    check_answer,
    coverage_check,
    expected_check,
    load_questions,
    pick_deployments,
    prompt_rule_checks,
    run_eval,
)
from gateway.state.memory import MemoryStore
from prompts import WORD_LIMIT, not_covered
from tests.support.fakes import ScriptedFactory, ScriptedProvider, answer, failure

PRODUCT = "Acme Cloud"
GOOD = (
    "To reset your password, open Settings, choose Security and select Reset password. "
    "A link arrives by email within five minutes. The Password reset article has details."
)


def failed_rules(answer_text: str, **kwargs: object) -> set[Rule]:
    checks = prompt_rule_checks(answer_text, **kwargs)  # type: ignore[arg-type]
    return {check.rule for check in checks if not check.passed}


def test_a_compliant_answer_passes_every_rule() -> None:
    question = EvalQuestion(
        "How do I reset my password?", covered=True, expect_contains=("Settings",)
    )
    checks = check_answer(GOOD, question, product=PRODUCT, model_names=("gpt-4o-mini",))
    assert [c.rule for c in checks] == [
        Rule.ANSWERED,
        Rule.WORD_LIMIT,
        Rule.PLAIN_TEXT,
        Rule.NO_AI_NAMES,
        Rule.COVERAGE,
        Rule.EXPECTED,
    ]
    assert all(c.passed for c in checks), checks


def test_word_limit_is_the_prompts() -> None:
    assert failed_rules(" ".join(["word"] * WORD_LIMIT)) == set()
    over = prompt_rule_checks(" ".join(["word"] * (WORD_LIMIT + 1)))
    (check,) = [c for c in over if not c.passed]
    assert check.rule is Rule.WORD_LIMIT and str(WORD_LIMIT + 1) in check.detail


@pytest.mark.parametrize(
    "markdown",
    [
        "## Resetting\nOpen Settings.",
        "Do this:\n- open Settings\n- choose Security",
        "Do this:\n1. open Settings\n2. choose Security",
        "Open **Settings** now.",
        "Run `acme reset` in a shell.",
        "See [the article](https://help.example.com/reset).",
        "| step | action |\n|---|---|\n| 1 | open |",
    ],
    ids=["heading", "bullets", "numbered", "bold", "code", "link", "table"],
)
def test_markdown_breaks_plain_text(markdown: str) -> None:
    assert failed_rules(markdown) == {Rule.PLAIN_TEXT}


@pytest.mark.parametrize(
    "answer_text",
    [
        "As ChatGPT, I suggest opening Settings.",
        "I am Claude, made by Anthropic. Open Settings.",
        "I'm a large language model, but open Settings.",
        "This assistant runs on acme-tuned-7b. Open Settings.",
    ],
)
def test_naming_a_model_or_its_technology_is_caught(answer_text: str) -> None:
    assert failed_rules(answer_text, model_names=("acme-tuned-7b",)) == {Rule.NO_AI_NAMES}


def test_plain_prose_with_brackets_and_numbers_is_not_markdown() -> None:
    text = "Plans cost 5 * 2 = 10 dollars [per seat] from version 2.1 on. Use Settings > Billing."
    assert failed_rules(text) == set()


@pytest.mark.parametrize(
    "reply",
    [
        not_covered(PRODUCT),
        not_covered(PRODUCT).upper().replace("COULD NOT", "COULD NOT "),
        "I couldn\u2019t find anything about that in our articles. I can open a support ticket.",
        "The help centre does not cover refunds for crypto. Want me to raise a ticket?",
    ],
)
def test_not_covered_reply_says_so_and_offers_a_ticket(reply: str) -> None:
    assert coverage_check(reply, covered=False, product=PRODUCT).passed


@pytest.mark.parametrize(
    ("reply", "missing"),
    [
        ("I could not find that in the help centre.", "does not offer a ticket"),
        ("Would you like me to open a support ticket?", "does not say"),
        (GOOD, "does not say"),
    ],
)
def test_not_covered_rule_names_what_is_missing(reply: str, missing: str) -> None:
    check = coverage_check(reply, covered=False, product=PRODUCT)
    assert not check.passed and missing in check.detail


def test_a_covered_question_must_not_get_the_not_covered_reply() -> None:
    assert not coverage_check(not_covered(PRODUCT), covered=True, product=PRODUCT).passed
    assert coverage_check(GOOD, covered=True, product=PRODUCT).passed


def test_expected_phrases_ignore_case_and_spacing() -> None:
    assert expected_check(GOOD, ["reset  PASSWORD", "five minutes"]).passed
    check = expected_check(GOOD, ["Settings", "two-factor"])
    assert not check.passed and "two-factor" in check.detail and "Settings" not in check.detail


def test_rules_without_expectations_do_not_apply() -> None:
    checks = check_answer(GOOD, EvalQuestion("q"), product=PRODUCT)
    assert {c.rule for c in checks} == {
        Rule.ANSWERED,
        Rule.WORD_LIMIT,
        Rule.PLAIN_TEXT,
        Rule.NO_AI_NAMES,
    }


# ------------------------------------------------------------------ questions files


def test_text_questions_one_a_line(tmp_path: Path) -> None:
    path = tmp_path / "questions.txt"
    path.write_text("# smoke questions\nHow do I reset my password?\n\n  Can I pay by invoice?  \n")
    assert load_questions(path) == (
        EvalQuestion("How do I reset my password?"),
        EvalQuestion("Can I pay by invoice?"),
    )


def test_yaml_questions_with_expectations(tmp_path: Path) -> None:
    path = tmp_path / "questions.yaml"
    path.write_text(
        "- How do I reset my password?\n"
        "- question: Do you sell hardware?\n"
        "  covered: false\n"
        "- question: Can I pay by invoice?\n"
        "  covered: true\n"
        "  expect_contains: [invoice, Billing]\n"
    )
    assert load_questions(path) == (
        EvalQuestion("How do I reset my password?"),
        EvalQuestion("Do you sell hardware?", covered=False),
        EvalQuestion("Can I pay by invoice?", covered=True, expect_contains=("invoice", "Billing")),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- question: hi\n  coverd: false\n", "item 1: unknown key 'coverd'"),
        ("- question: hi\n  covered: maybe\n", "'covered' must be true or false"),
        ("- {covered: true}\n", "'question' must be non-empty text"),
        ("question: hi\n", "expected a list"),
        ("- [unclosed\n", "questions.yaml:2: not valid YAML"),
        ("[]\n", "no questions in"),
    ],
)
def test_bad_yaml_questions_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "questions.yaml"
    path.write_text(text)
    with pytest.raises(QuestionsError, match=message.replace("[", r"\[")):
        load_questions(path)


def test_missing_questions_file(tmp_path: Path) -> None:
    with pytest.raises(QuestionsError, match="cannot read questions file"):
        load_questions(tmp_path / "nope.txt")


# ------------------------------------------------------------------ whole runs


def deployment(name: str, provider: ProviderKind, model: str, key_env: str | None) -> Deployment:
    return Deployment(name, provider, 100_000, Policy(retries=1), model, key_env)


CONFIG = Config(
    product=PRODUCT,
    deployments=(
        deployment("primary", ProviderKind.OPENAI, "gpt-4o-mini", "OPENAI_API_KEY"),
        deployment("fallback", ProviderKind.ANTHROPIC, "claude-haiku-4-5", "ANTHROPIC_API_KEY"),
    ),
    long_context=deployment("long", ProviderKind.GEMINI, "gemini-2.5-pro", "GEMINI_API_KEY"),
)
ENV = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}  # no Gemini key

QUESTIONS = (
    EvalQuestion("How do I reset my password?", covered=True, expect_contains=("Settings",)),
    EvalQuestion("Do you sell hardware?", covered=False),
)


class Run:
    """Real engines over scripted providers: a question's script per deployment."""

    def __init__(self, scripts: dict[str, list[Reply | object]]) -> None:
        self.clock = VirtualClock()
        self.providers = {
            name: ScriptedProvider(name, list(script), clock=self.clock)  # type: ignore[arg-type]
            for name, script in scripts.items()
        }
        self.configs: list[Config] = []

    def engine_for(self, config: Config) -> Engine:
        self.configs.append(config)
        return Engine(
            config,
            providers=ScriptedFactory(list(self.providers.values())),
            store=MemoryStore(),
            clock=self.clock,
            sleeper=self.clock,
            rng=FixedRandom(0.5),
            environ=ENV,
            count_tokens=lambda text: len(text.split()),
        )

    def run(self, names: tuple[str, ...] = ()) -> object:
        return run_eval(
            CONFIG,
            QUESTIONS,
            request_for=lambda q: Request("You are the support assistant.", q, 400, (), PRODUCT),
            engine_for=self.engine_for,
            deployments=pick_deployments(CONFIG, names),
        )


def test_every_deployment_is_asked_alone_and_judged() -> None:
    run = Run(
        {
            # primary follows the prompt.
            "primary": [answer(GOOD), answer(not_covered(PRODUCT))],
            # fallback drifts: markdown, and it answers the uncovered question anyway.
            "fallback": [answer("Open **Security** and reset."), answer("Sure, we sell routers.")],
            "long": [answer(GOOD)],
        }
    )
    report = run.run()

    # Each question went to each deployment on its own: no fallback, no long context.
    assert [tuple(d.name for d in c.deployments) for c in run.configs] == [
        ("primary",),
        ("fallback",),
        ("long",),
    ] * 2
    assert all(c.long_context is None for c in run.configs)
    assert run.providers["primary"].calls == 2 and run.providers["fallback"].calls == 2
    assert run.providers["long"].calls == 0  # no key: not run, never called

    assert report.deployments == ("primary", "fallback", "long")
    summary = report.summary()
    assert all(t.failed == 0 for t in summary["primary"].values())
    assert summary["fallback"][Rule.PLAIN_TEXT] == Tally(passed=1, failed=1)
    assert summary["fallback"][Rule.EXPECTED] == Tally(passed=0, failed=1)
    assert summary["fallback"][Rule.COVERAGE] == Tally(passed=1, failed=1)
    assert summary["long"] == {}
    assert report.not_run() == {"primary": 0, "fallback": 0, "long": 2}
    assert report.violations == 3 and report.ran

    first = report.questions[0].answers
    assert [a.status for a in first] == [
        AnswerStatus.ANSWERED,
        AnswerStatus.ANSWERED,
        AnswerStatus.NOT_RUN,
    ]
    assert first[0].text == GOOD
    assert "GEMINI_API_KEY" in first[2].detail  # why it was not run

    data = report.as_json()
    assert data["passed"] is False and data["violations"] == 3
    summary_json = data["summary"]
    assert isinstance(summary_json, dict)
    assert summary_json["fallback"]["rules"]["coverage"] == {"passed": 1, "failed": 1}
    assert summary_json["long"]["not_run"] == 2


def test_failures_and_refusals_are_violations_and_retries_still_apply() -> None:
    run = Run(
        {
            "primary": [failure(ErrorKind.RATE_LIMIT), answer(GOOD), answer(not_covered(PRODUCT))],
            "fallback": [Reply("I can't help with that.", refused=True)],
            "long": [failure(ErrorKind.AUTH)],
        }
    )
    report = run.run()
    primary, fallback, _ = report.questions[0].answers
    assert primary.status is AnswerStatus.ANSWERED and primary.calls == 2  # retried once
    assert fallback.status is AnswerStatus.REFUSED
    assert [(c.rule, c.passed) for c in fallback.checks] == [(Rule.ANSWERED, False)]
    assert report.summary()["primary"][Rule.ANSWERED] == Tally(passed=2)


def test_only_the_named_deployments_in_the_order_given() -> None:
    run = Run({"primary": [answer(GOOD)], "fallback": [answer(GOOD)], "long": [answer(GOOD)]})
    report = run.run(("fallback", "primary", "fallback"))
    assert report.deployments == ("fallback", "primary")
    with pytest.raises(ValueError, match=r"no deployment named 'nope'.*known: primary"):
        pick_deployments(CONFIG, ["nope"])


def test_nothing_ran_when_every_deployment_was_skipped() -> None:
    run = Run({"long": [answer(GOOD)]})
    report = run.run(("long",))
    assert not report.ran and report.violations == 0
    assert report.as_json()["passed"] is False
