"""`support-ask eval`: the portable prompt asked of every deployment, each answer checked.

Each question goes to each deployment *directly*: through the real engine, but with a
config holding only that deployment (no fallback, no long-context detour) and a fresh
state store per question (no cooldown from production is honoured, none is recorded,
and one bad answer does not skip the rest). Retries, backoff and the time budget still
apply as configured, so a flaky minute is not mistaken for drift.

The rules are checked mechanically, one `Check` per rule that applies:

- `answered`: the deployment answered (a refusal or a failure is a violation; a
  deployment that was never called, e.g. its key is not set, is *not run*, not failed);
- `word_limit`, `plain_text`, `no_ai_names`: the prompt's own rules, as
  `prompts.rule_breaks` states them (one source for the prompt and its checker), plus
  the configured models' ids and "language model"/"LLM" for `no_ai_names`;
- `coverage`: for a question marked `covered: false`, the answer says the articles do not
  cover it *and* offers a ticket (the prompt's sentence, or any wording of both); for one
  marked `covered: true`, the answer is not that sentence;
- `expected`: every `expect_contains` phrase appears (case and spacing ignored).

Question files: a `.yaml`/`.yml` file is a list (or `{questions: [...]}`) whose items are
a question string or `{question, covered, expect_contains}`; any other file is one
question per line, blank lines and `#` comments skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gateway.config import Config, Deployment
from gateway.model import FailureKind, Request, Result, Status
from gateway.record import record, replace

if TYPE_CHECKING:
    from gateway.seams import Compactor


class Rule(StrEnum):
    ANSWERED = "answered"
    WORD_LIMIT = "word_limit"
    PLAIN_TEXT = "plain_text"
    NO_AI_NAMES = "no_ai_names"
    COVERAGE = "coverage"
    EXPECTED = "expected"
    OTHER = "other_rule"  # a prompt rule break this module does not know by name


# How `prompts.rule_breaks` words each break, mapped to the rule it breaks.
_BREAK_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = (
    (re.compile(r"\bwords\b.*\blimit\b"), Rule.WORD_LIMIT),
    (re.compile(r"^markdown\b"), Rule.PLAIN_TEXT),
    (re.compile(r"\bnames an ai\b"), Rule.NO_AI_NAMES),
)

# Saying what it runs on without a brand name still breaks the prompt's rule 4.
_TECHNOLOGY = re.compile(r"\b(?:large\s+)?language\s+models?\b|\bLLMs?\b", re.IGNORECASE)

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
# "Says so": any common way of saying the articles do not have the answer.
_NOT_FOUND = re.compile(
    r"\b(?:could\s*n'?t|could not|can\s*n'?t|cannot|can not|unable to|did\s*n'?t|did not)"
    r"\s+(?:find|locate|see)\b"
    r"|\bnot\s+(?:covered|mentioned|included|described|in the)\b"
    r"|\b(?:do\s*n'?t|does\s*n'?t|do not|does not)\s+(?:have|cover|mention|include|say)\b"
    r"|\bno\s+(?:information|article|articles|details|mention)\b",
    re.IGNORECASE,
)
_TICKET = re.compile(r"\btickets?\b", re.IGNORECASE)


@record
class EvalQuestion:
    text: str
    covered: bool | None = None  # None: unknown, the coverage rule does not apply
    expect_contains: tuple[str, ...] = ()


@record
class Check:
    rule: Rule
    passed: bool
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"rule": str(self.rule), "passed": self.passed, "detail": self.detail}


class AnswerStatus(StrEnum):
    ANSWERED = "answered"
    REFUSED = "refused"
    FAILED = "failed"
    NOT_RUN = "not_run"  # never called: no key, window too small for the input, ...


@record
class Answer:
    """One deployment's reply to one question, and its checks."""

    deployment: str
    status: AnswerStatus
    text: str | None
    checks: tuple[Check, ...]
    elapsed_s: float
    calls: int
    detail: str = ""  # why it failed or was not run
    cause: FailureKind | None = None  # the kind of that failure (too large, no key, ...)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def as_json(self) -> dict[str, object]:
        return {
            "deployment": self.deployment,
            "status": str(self.status),
            "answer": self.text,
            "passed": self.passed,
            "checks": [check.as_json() for check in self.checks],
            "elapsed_s": round(self.elapsed_s, 3),
            "calls": self.calls,
            "detail": self.detail,
        }


@record
class QuestionReport:
    question: EvalQuestion
    answers: tuple[Answer, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "question": self.question.text,
            "covered": self.question.covered,
            "expect_contains": list(self.question.expect_contains),
            "answers": [answer.as_json() for answer in self.answers],
        }


@record
class Tally:
    passed: int = 0
    failed: int = 0

    def add(self, passed: bool) -> Tally:
        return Tally(self.passed + passed, self.failed + (not passed))


@record
class EvalReport:
    deployments: tuple[str, ...]
    questions: tuple[QuestionReport, ...]

    def summary(self) -> dict[str, dict[Rule, Tally]]:
        """Pass/fail counts per deployment and rule (only rules that applied at least once)."""
        table: dict[str, dict[Rule, Tally]] = {name: {} for name in self.deployments}
        for report in self.questions:
            for answer in report.answers:
                row = table[answer.deployment]
                for check in answer.checks:
                    row[check.rule] = row.get(check.rule, Tally()).add(check.passed)
        return table

    def not_run(self) -> dict[str, int]:
        """Per deployment, the questions it was never called for."""
        counts = dict.fromkeys(self.deployments, 0)
        for report in self.questions:
            for answer in report.answers:
                counts[answer.deployment] += answer.status is AnswerStatus.NOT_RUN
        return counts

    def not_run_causes(self) -> frozenset[FailureKind | None]:
        """Why the answers never asked for were not: a prompt too large for the window, a
        key not set, ..."""
        return frozenset(
            answer.cause
            for report in self.questions
            for answer in report.answers
            if answer.status is AnswerStatus.NOT_RUN
        )

    @property
    def violations(self) -> int:
        return sum(
            not check.passed
            for report in self.questions
            for answer in report.answers
            for check in answer.checks
        )

    @property
    def cells(self) -> int:
        """Answers wanted: every question of every deployment."""
        return len(self.questions) * len(self.deployments)

    @property
    def unasked(self) -> int:
        """Answers never asked for (a key not set, a window too small): each one a check
        that did not happen, so an eval with any is not a pass."""
        return sum(self.not_run().values())

    @property
    def ran(self) -> bool:
        """Whether any deployment was called at all."""
        return any(
            answer.status is not AnswerStatus.NOT_RUN
            for report in self.questions
            for answer in report.answers
        )

    def as_json(self) -> dict[str, object]:
        not_run = self.not_run()
        return {
            "schema_version": 1,
            "passed": self.violations == 0 and self.ran and self.unasked == 0,
            "violations": self.violations,
            "not_run": self.unasked,
            "deployments": list(self.deployments),
            "summary": {
                name: {
                    "rules": {
                        str(rule): {"passed": tally.passed, "failed": tally.failed}
                        for rule, tally in rules.items()
                    },
                    "not_run": not_run[name],
                }
                for name, rules in self.summary().items()
            },
            "questions": [report.as_json() for report in self.questions],
        }


# ---------------------------------------------------------------------------- the rules


def _normal(text: str) -> str:
    return " ".join(text.translate(_QUOTES).split()).casefold()


def prompt_rule_checks(answer: str, *, model_names: Sequence[str] = ()) -> tuple[Check, ...]:
    """`word_limit`, `plain_text` and `no_ai_names` for one answer: always all three."""
    from prompts import rule_breaks

    found: dict[Rule, list[str]] = {}
    for text in rule_breaks(answer):
        rule = next((r for pattern, r in _BREAK_RULES if pattern.search(text.lower())), Rule.OTHER)
        found.setdefault(rule, []).append(text)
    if Rule.NO_AI_NAMES not in found:
        extra = _named(answer, model_names)
        if extra:
            found[Rule.NO_AI_NAMES] = [f"names an AI model or its technology: {extra}"]
    rules = [Rule.WORD_LIMIT, Rule.PLAIN_TEXT, Rule.NO_AI_NAMES]
    rules += [rule for rule in found if rule not in rules]
    return tuple(Check(rule, rule not in found, "; ".join(found.get(rule, []))) for rule in rules)


def _named(answer: str, model_names: Sequence[str]) -> str | None:
    technology = _TECHNOLOGY.search(answer)
    if technology:
        return technology.group(0)
    lowered = answer.casefold()
    for name in model_names:
        if name and re.search(rf"(?<![\w-]){re.escape(name.casefold())}(?![\w-])", lowered):
            return name
    return None


def coverage_check(answer: str, *, covered: bool, product: str) -> Check:
    from prompts import is_not_covered

    verbatim = is_not_covered(answer, product)
    if covered:
        if verbatim:
            return Check(Rule.COVERAGE, False, "said the articles do not cover a covered question")
        return Check(Rule.COVERAGE, True)
    text = answer.translate(_QUOTES)
    says_so = verbatim or bool(_NOT_FOUND.search(text))
    offers_ticket = verbatim or bool(_TICKET.search(text))
    missing = [
        what
        for what, ok in (
            ("does not say the articles do not cover it", says_so),
            ("does not offer a ticket", offers_ticket),
        )
        if not ok
    ]
    return Check(Rule.COVERAGE, not missing, "; ".join(missing))


def expected_check(answer: str, phrases: Sequence[str]) -> Check:
    normal = _normal(answer)
    missing = [phrase for phrase in phrases if _normal(phrase) not in normal]
    detail = "" if not missing else "missing: " + ", ".join(repr(p) for p in missing)
    return Check(Rule.EXPECTED, not missing, detail)


def check_answer(
    answer: str, question: EvalQuestion, *, product: str, model_names: Sequence[str] = ()
) -> tuple[Check, ...]:
    """Every rule that applies to this answer of this question. Pure."""
    checks = [Check(Rule.ANSWERED, True), *prompt_rule_checks(answer, model_names=model_names)]
    if question.covered is not None:
        checks.append(coverage_check(answer, covered=question.covered, product=product))
    if question.expect_contains:
        checks.append(expected_check(answer, question.expect_contains))
    return tuple(checks)


# ------------------------------------------------------------------------ the questions


class QuestionsError(ValueError):
    """A questions file that cannot be used; the message names the file and the fix."""


def load_questions(path: Path) -> tuple[EvalQuestion, ...]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise QuestionsError(f"cannot read questions file {path}: {reason}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        questions = _yaml_questions(text, path)
    else:
        questions = tuple(
            EvalQuestion(line.strip())
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        )
    if not questions:
        raise QuestionsError(f"no questions in {path}")
    return questions


def _yaml_questions(text: str, path: Path) -> tuple[EvalQuestion, ...]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise QuestionsError(f"{where}: not valid YAML") from None
    if isinstance(data, dict) and set(data) == {"questions"}:
        data = data["questions"]
    if data is None:
        return ()
    if not isinstance(data, list):
        raise QuestionsError(f"{path}: expected a list of questions")
    return tuple(_yaml_item(item, f"{path}: item {n}") for n, item in enumerate(data, start=1))


_ITEM_KEYS = frozenset({"question", "covered", "expect_contains"})


def _yaml_item(item: object, where: str) -> EvalQuestion:
    if isinstance(item, str) and item.strip():
        return EvalQuestion(item.strip())
    if not isinstance(item, dict):
        raise QuestionsError(f"{where}: expected a question or {{question, covered, ...}}")
    unknown = sorted(str(key) for key in set(item) - _ITEM_KEYS)
    if unknown:
        raise QuestionsError(f"{where}: unknown key {unknown[0]!r} (known: {sorted(_ITEM_KEYS)})")
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionsError(f"{where}: 'question' must be non-empty text")
    covered = item.get("covered")
    if covered is not None and not isinstance(covered, bool):
        raise QuestionsError(f"{where}: 'covered' must be true or false")
    expect = item.get("expect_contains", [])
    if isinstance(expect, str):
        expect = [expect]
    if not isinstance(expect, list) or not all(isinstance(e, str) and e.strip() for e in expect):
        raise QuestionsError(f"{where}: 'expect_contains' must be a list of text")
    return EvalQuestion(question.strip(), covered, tuple(expect))


# ---------------------------------------------------------------------------- the run


class Asker(Protocol):
    def ask(self, request: Request, *, compact: Compactor | None = None) -> Result: ...


def pick_deployments(config: Config, names: Sequence[str] = ()) -> tuple[Deployment, ...]:
    """The deployments to evaluate: all (long-context included), or those named, in order."""
    every = config.all_deployments()
    if not names:
        return every
    by_name = {d.name: d for d in every}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        known = ", ".join(by_name)
        raise ValueError(f"no deployment named {unknown[0]!r} in the config (known: {known})")
    return tuple(by_name[name] for name in dict.fromkeys(names))


def alone(config: Config, deployment: Deployment) -> Config:
    """`config` with `deployment` as its only deployment: no fallback, no long context."""
    return replace(config, deployments=(deployment,), long_context=None)


def run_eval(
    config: Config,
    questions: Sequence[EvalQuestion],
    *,
    request_for: Callable[[str], Request],
    engine_for: Callable[[Config], Asker],
    deployments: Sequence[Deployment],
    on_answer: Callable[[EvalQuestion, Answer], None] | None = None,
    compact_for: Callable[[str], Compactor] | None = None,
) -> EvalReport:
    """Ask every question of every deployment, one deployment alone at a time.

    `engine_for` builds an engine for a one-deployment config; it is called per question
    and deployment so nothing (cooldowns above all) carries from one answer to the next.
    `compact_for` gives a question's smaller requests, for a deployment whose window
    cannot hold `request_for`'s (fewer passages, as `ask` sends it).
    """
    model_names = tuple(d.model for d in config.all_deployments() if d.model)
    reports = []
    for question in questions:
        request = request_for(question.text)
        compact = None if compact_for is None else compact_for(question.text)
        answers = []
        for deployment in deployments:
            result = engine_for(alone(config, deployment)).ask(request, compact=compact)
            answer = judge(
                deployment.name,
                result,
                question,
                product=request.product or config.product,
                model_names=model_names,
            )
            if on_answer is not None:
                on_answer(question, answer)
            answers.append(answer)
        reports.append(QuestionReport(question, tuple(answers)))
    return EvalReport(tuple(d.name for d in deployments), tuple(reports))


def judge(
    deployment: str,
    result: Result,
    question: EvalQuestion,
    *,
    product: str,
    model_names: Sequence[str] = (),
) -> Answer:
    """One engine result as an eval answer with its checks. Pure."""
    calls = result.served_attempts

    cause = None if result.error is None else result.error.kind

    def answer(status: AnswerStatus, checks: tuple[Check, ...], detail: str = "") -> Answer:
        return Answer(
            deployment, status, result.answer, checks, result.elapsed_s, calls, detail, cause
        )

    if result.status is Status.ANSWERED and result.answer is not None:
        checks = check_answer(result.answer, question, product=product, model_names=model_names)
        return answer(AnswerStatus.ANSWERED, checks)
    if result.status is Status.REFUSED:
        return answer(AnswerStatus.REFUSED, (Check(Rule.ANSWERED, False, "refused"),))
    detail = _why(result)
    if calls == 0:
        return answer(AnswerStatus.NOT_RUN, (), detail)
    return answer(AnswerStatus.FAILED, (Check(Rule.ANSWERED, False, detail),), detail)


def _why(result: Result) -> str:
    if result.error is not None:
        lines = [d.last_error for d in result.error.deployments if d.last_error]
        return lines[0] if lines else result.error.message
    last = next((a for a in reversed(result.attempts) if a.outcome.called), None)
    return "" if last is None else last.detail
