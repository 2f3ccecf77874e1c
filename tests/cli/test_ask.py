"""The ask command through Typer's runner: question sources, stdout and stderr rules, JSON,
streaming, exit codes. The engine is replaced by a scripted one, so each test states
exactly what the engine reported and checks what the user sees."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli.commands import ask as ask_module
from cli.runtime import wiring
from gateway.model import (
    Attempt,
    DeploymentError,
    ErrorKind,
    FailureKind,
    Outcome,
    QuestionError,
    Request,
    Result,
    Route,
    Status,
)
from tests.support.cli_runner import run

CONFIG = """\
product: Acme Cloud
# These tests script what the engine reports for any question ("q"): the relevance floor
# is off, so none is handed off as not covered before the engine is asked.
articles:
  min_relevance: 0
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    base_url: http://127.0.0.1:9/v1
    context_window: 128000
  - name: fallback
    provider: anthropic
    model: claude-haiku-4-5
    api_key_env: ANTHROPIC_API_KEY
    base_url: http://127.0.0.1:9
    context_window: 200000
  - name: local
    provider: local
    context_window: 1000000
"""

SECRET = "sk-test-THIS-MUST-NEVER-SHOW-1234567890"


def attempt(
    name: str,
    decision: Outcome,
    *,
    number: int = 1,
    status: int | None = None,
    kind: ErrorKind | None = None,
    wait: float = 0.0,
    detail: str = "",
) -> Attempt:
    return Attempt(name, number, status, kind, decision, wait, 0.01, detail)


def result(
    status: Status = Status.ANSWERED,
    answer: str | None = "Open Settings, then Reset password.",
    deployment: str | None = "primary",
    attempts: tuple[Attempt, ...] | None = None,
    error: QuestionError | None = None,
    incomplete: bool = False,
    provider: str | None = "openai",
    model: str | None = "gpt-4o-mini",
) -> Result:
    if attempts is None:
        attempts = (attempt("primary", Outcome.ANSWERED, status=200),)
    return Result(
        status=status,
        answer=answer,
        deployment=deployment,
        provider=provider,
        model=model,
        routed=Route.NORMAL,
        input_tokens=321,
        elapsed_s=0.25,
        attempts=attempts,
        error=error,
        incomplete=incomplete,
    )


FELL_BACK = result(
    answer="Use the reset link.",
    deployment="fallback",
    provider="anthropic",
    model="claude-haiku-4-5",
    attempts=(
        attempt("primary", Outcome.RETRY, status=429, kind=ErrorKind.RATE_LIMIT, wait=0.01),
        attempt(
            "primary",
            Outcome.FAIL_OVER,
            number=2,
            status=429,
            kind=ErrorKind.RATE_LIMIT,
            detail="rate limited",
        ),
        attempt("fallback", Outcome.ANSWERED, status=200),
    ),
)

EXHAUSTED = result(
    status=Status.FAILED,
    answer=None,
    deployment=None,
    provider=None,
    model=None,
    attempts=(
        attempt("primary", Outcome.FAIL_OVER, status=401, kind=ErrorKind.AUTH, detail="bad key"),
        attempt("fallback", Outcome.SKIPPED, number=0, detail="ANTHROPIC_API_KEY not set"),
    ),
    error=QuestionError(
        FailureKind.EXHAUSTED,
        "no deployment could answer",
        (
            DeploymentError("primary", "auth: bad key"),
            DeploymentError("fallback", "skipped: ANTHROPIC_API_KEY not set"),
        ),
    ),
)


@dataclass
class FakeEngine:
    """Plays a Result: reports its attempts (sleeping the waits on the given sleeper),
    streams `deltas` when asked to stream, or raises `boom`."""

    outcome: Result
    deltas: tuple[str, ...] = ()
    boom: BaseException | None = None
    log_line: str | None = None
    requests: list[Request] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        self.kwargs["closed"] = True

    def ask(
        self,
        request: Request,
        *,
        on_text: Any = None,
        exact_tokens: bool = False,
        started: float | None = None,
        on_restart: Any = None,
        compact: Any = None,
        on_interrupt: Any = None,
        on_send: Any = None,
    ) -> Result:
        self.requests.append(request)
        self.kwargs["exact_tokens"] = exact_tokens
        self.kwargs["on_restart"] = on_restart
        if self.log_line:
            logging.getLogger("support_ask.engine").info(self.log_line)
        if self.boom is not None:
            raise self.boom
        on_attempt = self.kwargs.get("on_attempt")
        for a in self.outcome.attempts:
            if on_attempt:
                on_attempt(a)
            if a.outcome is Outcome.RETRY:
                self.kwargs["sleeper"].sleep(a.wait_s)
        if on_text is not None:
            for delta in self.deltas:
                on_text(delta)
        return self.outcome


@pytest.fixture
def cli_config() -> str:
    return CONFIG


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeEngine]]:
    """Install a FakeEngine: `engine(result, deltas=..., boom=...)`."""
    holder: dict[str, FakeEngine] = {}

    def install(outcome: Result | None = None, **fields: Any) -> FakeEngine:
        fake = FakeEngine(outcome or result(), **fields)
        holder["fake"] = fake
        return fake

    def build_engine(config: object, **kwargs: Any) -> FakeEngine:
        fake = holder.setdefault("fake", FakeEngine(result()))
        fake.kwargs.update(kwargs, config=config)
        return fake

    monkeypatch.setattr(wiring, "build_engine", build_engine)
    yield install


# --- the default command and the question -------------------------------------------------


def test_bare_question_and_ask_subcommand_are_the_same(home: Path, engine: Any) -> None:
    fake = engine()
    bare = run(["How do I reset my password?", "-a", "kb"])
    explicit = run(["ask", "How do I reset my password?", "-a", "kb"])
    assert bare.exit_code == explicit.exit_code == 0
    assert bare.stdout == explicit.stdout == "Open Settings, then Reset password.\n"
    assert [r.question for r in fake.requests] == ["How do I reset my password?"] * 2


def test_options_before_the_question_still_ask(home: Path, engine: Any) -> None:
    fake = engine()
    out = run(["--json", "-a", "kb", "Where are invoices?"])
    assert out.exit_code == 0
    assert json.loads(out.stdout)["status"] == "answered"
    assert fake.requests[0].question == "Where are invoices?"


def test_several_words_are_one_question(home: Path, engine: Any) -> None:
    fake = engine()
    assert run(["How", "do", "I", "log", "in?", "-a", "kb"]).exit_code == 0
    assert fake.requests[0].question == "How do I log in?"


@pytest.mark.parametrize(("typo", "meant"), [("simulat", "simulate"), ("cooldown", "cooldowns")])
def test_a_mistyped_command_is_not_asked(home: Path, engine: Any, typo: str, meant: str) -> None:
    fake = engine()
    out = run([typo])
    assert out.exit_code == 2
    assert f"No such command '{typo}'" in out.stderr
    assert f"Did you mean '{meant}'?" in out.stderr
    assert fake.requests == []


@pytest.mark.parametrize("question", ["billing", "simulate a login failure"])
def test_one_word_or_a_sentence_near_a_command_is_asked(
    home: Path, engine: Any, question: str
) -> None:
    fake = engine()
    assert run([question, "-a", "kb"]).exit_code == 0
    assert fake.requests[0].question == question


def test_help_alone_or_with_a_command_shows_the_help_not_an_answer(home: Path, engine: Any) -> None:
    fake = engine()
    out = run(["help"])
    assert out.exit_code == 0
    assert "Usage: support-ask [OPTIONS] COMMAND" in out.stdout
    stats = run(["help", "stats"])
    assert stats.exit_code == 0 and "Usage: support-ask stats" in stats.stdout
    assert fake.requests == []
    assert run(["help", "me", "reset", "my", "password", "-a", "kb"]).exit_code == 0
    assert fake.requests[0].question == "help me reset my password"


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "on", "my", "usage", "-a", "kb"],
        ["stats", "on", "my", "usage"],
        ["config", "my", "account"],
        ["cooldowns", "for", "my", "team"],
    ],
)
def test_a_question_that_starts_with_a_command_name_says_how_to_ask_it(
    home: Path, engine: Any, args: list[str]
) -> None:
    import shlex

    fake = engine()
    out = run(args)
    assert out.exit_code == 2
    assert f"support-ask ask {shlex.join(args)}" in out.stderr
    assert fake.requests == []
    asked = run(["ask", *args])  # as the message says
    assert asked.exit_code == 0
    assert fake.requests[0].question == " ".join(a for a in args if a not in ("-a", "kb"))


def test_a_mistyped_option_of_a_command_gets_no_question_hint(home: Path) -> None:
    out = run(["stats", "--sinc", "1h"])
    assert out.exit_code == 2 and "No such option" in out.stderr
    assert "as a question" not in out.stderr


def test_double_dash_makes_the_rest_the_question(home: Path, engine: Any) -> None:
    fake = engine()
    assert run(["-a", "kb", "--", "stats", "on", "my", "usage"]).exit_code == 0
    assert fake.requests[0].question == "stats on my usage"


def test_dash_reads_the_question_from_stdin(home: Path, engine: Any) -> None:
    fake = engine()
    out = run(["-", "-a", "kb"], input="What is SSO?\n")
    assert out.exit_code == 0
    assert fake.requests[0].question == "What is SSO?"


def test_piped_stdin_is_read_when_no_question_is_given(home: Path, engine: Any) -> None:
    fake = engine()
    out = run(["-a", "kb"], input="Can I export my data?\n")
    assert out.exit_code == 0
    assert fake.requests[0].question == "Can I export my data?"


def test_interactive_call_with_no_question_prints_help(
    home: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = engine()
    monkeypatch.setattr(ask_module, "stdin_is_tty", lambda: True)
    out = run([])
    assert out.exit_code == 2
    assert "Usage: support-ask" in out.stderr
    assert "simulate" in out.stderr and "cooldowns" in out.stderr
    assert out.stdout == ""
    assert fake.requests == []


@pytest.mark.parametrize(("args", "stdin"), [(["   "], None), (["-"], "  \n\n"), ([], "")])
def test_an_empty_question_exits_66(
    home: Path, engine: Any, args: list[str], stdin: str | None
) -> None:
    fake = engine()
    out = run([*args, "-a", "kb"], input=stdin)
    assert out.exit_code == 66
    assert "question is empty" in out.stderr
    assert fake.requests == []


# --- stdout ------------------------------------------------------------------------------


def test_the_answer_is_written_exactly_never_through_markup_or_wrapping(
    home: Path, engine: Any
) -> None:
    text = "[bold]Step 1[/bold]: " + "word " * 80 + "**done**"
    engine(result(answer=text))
    out = run(["q", "-a", "kb"])
    assert out.stdout == text + "\n"


def test_an_answer_ending_in_a_newline_gets_no_second_one(home: Path, engine: Any) -> None:
    engine(result(answer="Line one.\nLine two.\n"))
    assert run(["q", "-a", "kb"]).stdout == "Line one.\nLine two.\n"


def test_json_on_success_is_the_contract_object(home: Path, engine: Any) -> None:
    fake = engine(FELL_BACK)
    out = run(["q", "-a", "kb", "--json"])
    assert out.exit_code == 0
    obj = json.loads(out.stdout)
    assert obj["schema_version"] == 1
    assert obj["status"] == "answered"
    assert obj["answer"] == "Use the reset link."
    assert (obj["deployment"], obj["provider"], obj["model"]) == (
        "fallback",
        "anthropic",
        "claude-haiku-4-5",
    )
    assert obj["routed"] == "normal" and obj["input_tokens"] == 321
    assert [a["decision"] for a in obj["attempts"]] == ["retry", "fail_over", "answered"]
    assert obj["attempts"][0]["error_class"] == "rate_limit"
    assert "error" not in obj
    assert fake.kwargs["exact_tokens"] is False  # the engine decides when to count exactly


def test_json_on_failure_has_a_null_answer_and_the_error(home: Path, engine: Any) -> None:
    engine(EXHAUSTED)
    out = run(["q", "-a", "kb", "--json"])
    assert out.exit_code == 69
    obj = json.loads(out.stdout)
    assert obj["status"] == "failed" and obj["answer"] is None
    assert obj["error"]["kind"] == "exhausted"
    assert [d["name"] for d in obj["error"]["deployments"]] == ["primary", "fallback"]


def _one_object(stdout: str) -> dict[str, Any]:
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout  # one object, never two
    obj = json.loads(lines[0])
    assert obj["schema_version"] == 1 and obj["answer"] is None
    assert set(obj) >= {"status", "deployment", "routed", "attempts", "error", "elapsed_s"}
    return obj


@pytest.mark.parametrize(
    ("args", "stdin", "code", "kind"),
    [
        (["   ", "-a", "kb"], None, 66, "no_input"),
        (["-", "-a", "kb"], "  \n", 66, "no_input"),
        (["q", "-a", "no-such-kb"], None, 66, "no_input"),
        (["q", "-a", "kb", "-d", "nope"], None, 2, "usage"),
        (["q", "-a", "kb", "--budget", "0"], None, 2, "usage"),
    ],
)
def test_json_prints_one_object_for_failures_before_the_engine_runs(
    home: Path, engine: Any, args: list[str], stdin: str | None, code: int, kind: str
) -> None:
    fake = engine()
    out = run([*args, "--json"], input=stdin)
    assert out.exit_code == code
    obj = _one_object(out.stdout)
    assert (obj["status"], obj["error"]["kind"]) == ("fatal", kind)
    assert obj["error"]["message"] and obj["error"]["message"] in out.stderr
    assert obj["attempts"] == [] and obj["deployment"] is None
    assert fake.requests == []


def test_json_for_a_bad_config_lists_every_problem(home: Path, engine: Any) -> None:
    bad = CONFIG.replace("product: Acme Cloud", "prodct: Acme").replace(
        "context_window: 200000", "context_window: -1"
    )
    (home / "support-ask.yaml").write_text(bad)
    out = run(["q", "-a", "kb", "--json", "--stream"])
    assert out.exit_code == 78
    obj = _one_object(out.stdout)
    assert obj["type"] == "result"  # JSON Lines with --stream: the result line
    assert (obj["status"], obj["error"]["kind"]) == ("fatal", "config")
    assert [p["key"] for p in obj["error"]["problems"]] == [
        "prodct",
        "deployments[1].context_window",
    ]


def test_json_for_an_internal_error_and_for_ctrl_c(home: Path, engine: Any) -> None:
    engine(boom=RuntimeError("unexpected state"))
    out = run(["q", "-a", "kb", "--json"])
    assert out.exit_code == 1
    assert _one_object(out.stdout)["error"]["kind"] == "internal"

    engine(FELL_BACK, boom=KeyboardInterrupt())
    out = run(["q", "-a", "kb", "--json"])
    assert out.exit_code == 130
    obj = _one_object(out.stdout)
    assert (obj["status"], obj["error"]["kind"]) == ("failed", "interrupted")
    assert "interrupted" in out.stderr
    logged = [json.loads(line) for line in (home / "attempts.jsonl").read_text().splitlines()]
    assert logged and logged[-1]["outcome"] == "failed"  # the stopped question is logged


def test_no_question_on_a_terminal_with_json_still_prints_an_object(
    home: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ask_module, "stdin_is_tty", lambda: True)
    out = run(["--json"])
    assert out.exit_code == 2
    assert _one_object(out.stdout)["error"]["kind"] == "usage"


def test_stream_writes_each_delta_then_ends_the_line(home: Path, engine: Any) -> None:
    engine(result(answer="Open Settings."), deltas=("Open ", "Settings."))
    out = run(["q", "-a", "kb", "--stream"])
    assert out.exit_code == 0
    assert out.stdout == "Open Settings.\n"  # streamed once, not repeated at the end


def test_stream_falls_back_to_the_whole_answer_when_nothing_streamed(
    home: Path, engine: Any
) -> None:
    engine(result(answer="From the offline ranker."), deltas=())
    assert run(["q", "-a", "kb", "--stream"]).stdout == "From the offline ranker.\n"


def test_stream_with_json_is_json_lines(home: Path, engine: Any) -> None:
    engine(result(answer="Open Settings."), deltas=("Open ", "Settings."))
    out = run(["q", "-a", "kb", "--stream", "--json"])
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    # A blank at a delta's end waits for the next one: it goes with a marker there if
    # that marker names no passage sent (`gateway.answers.citations`).
    assert lines[:2] == [
        {"type": "delta", "text": "Open"},
        {"type": "delta", "text": " Settings."},
    ]
    assert lines[2]["type"] == "result" and lines[2]["answer"] == "Open Settings."
    assert len(lines) == 3


def test_allow_restart_hands_the_engine_a_restart_that_writes_one_json_line(
    home: Path, engine: Any
) -> None:
    fake = engine(result(answer="Open Settings."), deltas=("Open Settings.",))
    out = run(["q", "-a", "kb", "--stream", "--json", "--allow-restart"])
    assert out.exit_code == 0
    restart = fake.kwargs["on_restart"]
    assert callable(restart)
    from io import StringIO

    from cli.terminal.output import StreamSink

    written = StringIO()
    sink = StreamSink(json_lines=True, out=written)
    sink("Open Sett")
    sink.restart("primary", "the reply stalled")
    assert [json.loads(line) for line in written.getvalue().splitlines()] == [
        {"type": "delta", "text": "Open Sett"},
        {"type": "restart", "deployment": "primary", "reason": "the reply stalled"},
    ]
    run(["q", "-a", "kb", "--stream", "--json"])
    assert fake.kwargs["on_restart"] is None, "without the flag the engine stops a break"


@pytest.mark.parametrize("flags", [[], ["--stream"], ["--json"]], ids=["none", "stream", "json"])
def test_allow_restart_needs_stream_and_json(home: Path, engine: Any, flags: list[str]) -> None:
    engine(result(answer="x"))
    out = run(["q", "-a", "kb", "--allow-restart", *flags])
    assert out.exit_code == 2
    assert "--allow-restart needs --stream and --json" in out.stderr


def test_a_stream_that_broke_after_text_exits_69_with_the_text_kept(
    home: Path, engine: Any
) -> None:
    broken = result(
        status=Status.FAILED,
        answer=None,
        attempts=(attempt("primary", Outcome.STOPPED, kind=ErrorKind.NETWORK, detail="reset"),),
        error=QuestionError(FailureKind.INCOMPLETE, "the answer stream broke after text"),
        incomplete=True,
    )
    engine(broken, deltas=("Open Sett",))
    out = run(["q", "-a", "kb", "--stream"])
    assert out.exit_code == 69
    assert out.stdout == "Open Sett\n"
    assert "the answer stream broke" in out.stderr
    as_json = run(["q", "-a", "kb", "--stream", "--json"])
    assert json.loads(as_json.stdout.splitlines()[-1])["incomplete"] is True


# --- exit codes ----------------------------------------------------------------------------


def _failed(kind: FailureKind) -> Result:
    return result(
        status=Status.FAILED,
        answer=None,
        deployment=None,
        error=QuestionError(kind, f"failed: {kind}", (DeploymentError("primary", "x"),)),
    )


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (result(), 0),
        (result(status=Status.REFUSED, answer="I can't help with that."), 3),
        (
            result(
                status=Status.FATAL,
                answer=None,
                error=QuestionError(FailureKind.BAD_REQUEST, "malformed request"),
            ),
            65,
        ),
        (_failed(FailureKind.EXHAUSTED), 69),
        (_failed(FailureKind.UNAVAILABLE), 75),
        (_failed(FailureKind.INCOMPLETE), 69),
    ],
)
def test_exit_code_follows_the_result(home: Path, engine: Any, outcome: Result, code: int) -> None:
    engine(outcome)
    assert run(["q", "-a", "kb"]).exit_code == code


def test_a_refusal_is_on_stdout_as_is(home: Path, engine: Any) -> None:
    engine(result(status=Status.REFUSED, answer="I can't help with that."))
    out = run(["q", "-a", "kb"])
    assert out.exit_code == 3
    assert out.stdout == "I can't help with that.\n"
    assert "refused" in out.stderr


def test_failure_lists_each_deployment_and_a_fix(home: Path, engine: Any) -> None:
    engine(EXHAUSTED)
    out = run(["q", "-a", "kb"])
    assert out.stdout == ""
    assert "no deployment could answer" in out.stderr
    assert "primary: auth: bad key" in out.stderr
    assert "fallback: skipped: ANTHROPIC_API_KEY not set" in out.stderr
    assert "config check" in out.stderr


def test_all_cooling_down_says_retry_later(home: Path, engine: Any) -> None:
    engine(_failed(FailureKind.UNAVAILABLE))
    out = run(["q", "-a", "kb"])
    assert out.exit_code == 75
    assert "retry later" in out.stderr and "cooldowns" in out.stderr


def test_exit_75_says_how_long_to_wait_in_json_and_on_stderr(
    home: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from gateway.state.file import FileStore

    (home / "support-ask.yaml").write_text(CONFIG.split("  - name: local")[0])
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    now = time.time()
    store = FileStore(home / "state.json")
    store.cool("primary", until=now + 600, kind=ErrorKind.RATE_LIMIT, now=now)
    store.cool("fallback", until=now + 42, kind=ErrorKind.OVERLOADED, now=now)
    engine(_failed(FailureKind.UNAVAILABLE))
    out = run(["q", "-a", "kb", "--json"])
    assert out.exit_code == 75
    wait = json.loads(out.stdout)["error"]["retry_after_s"]
    assert 40 < wait <= 42  # the first deployment back, not the last
    assert "retry in 4" in out.stderr  # 41s or 42s


def test_retry_after_is_only_in_the_json_of_exit_75(home: Path, engine: Any) -> None:
    engine(EXHAUSTED)
    assert "retry_after_s" not in json.loads(run(["q", "-a", "kb", "--json"]).stdout)["error"]


def test_an_internal_error_is_exit_1_without_a_traceback(home: Path, engine: Any) -> None:
    engine(boom=RuntimeError("unexpected state"))
    out = run(["q", "-a", "kb"])
    assert out.exit_code == 1
    assert "internal error" in out.stderr and "unexpected state" in out.stderr
    assert "Traceback" not in out.stderr
    debug = run(["q", "-a", "kb", "--debug"])
    assert debug.exit_code == 1
    assert "Traceback" in debug.stderr


def test_an_unknown_flag_is_a_usage_error(home: Path, engine: Any) -> None:
    out = run(["q", "--no-such-flag"])
    assert out.exit_code == 2
    assert "No such option" in out.stderr


# --- stderr --------------------------------------------------------------------------------


def test_a_fallback_answer_gets_a_one_line_notice(home: Path, engine: Any) -> None:
    engine(FELL_BACK)
    out = run(["q", "-a", "kb"])
    assert out.stdout == "Use the reset link.\n"
    notice = (
        "answered by fallback (anthropic claude-haiku-4-5) after 3 attempts; primary: rate_limit"
    )
    assert notice in out.stderr


def test_the_first_deployment_answering_needs_no_notice(home: Path, engine: Any) -> None:
    engine(result())
    assert "answered by" not in run(["q", "-a", "kb"]).stderr


def test_quiet_silences_all_but_errors(home: Path, engine: Any) -> None:
    engine(FELL_BACK)
    out = run(["q", "-q", "--show-attempts"])  # no --articles: would warn, but -q
    assert out.exit_code == 0
    assert out.stderr == ""
    engine(EXHAUSTED)
    failed = run(["q", "-q", "-a", "kb"])
    assert "no deployment could answer" in failed.stderr


def test_no_table_off_a_terminal_unless_asked(home: Path, engine: Any) -> None:
    engine(FELL_BACK)
    plain = run(["q", "-a", "kb"])
    assert "rate_limit" not in plain.stderr.replace("primary: rate_limit", "")
    shown = run(["q", "-a", "kb", "--show-attempts"])
    table = shown.stderr
    for cell in ("deployment", "decision", "primary", "fallback", "429", "fail_over", "retry"):
        assert cell in table
    assert "\x1b[" not in table  # not a terminal: no colour, no cursor movement
    assert shown.stdout == "Use the reset link.\n"  # the table never touches stdout


def test_missing_articles_flag_warns(home: Path, engine: Any) -> None:
    engine()
    out = run(["q"])
    assert out.exit_code == 0
    assert "no --articles given" in out.stderr


def test_verbose_logs_to_stderr_with_keys_redacted(
    home: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    engine(result(), log_line=f"calling primary with Authorization: Bearer {SECRET}")
    out = run(["q", "-a", "kb", "-v"])
    assert "calling primary" in out.stderr
    assert SECRET not in out.stderr and SECRET not in out.stdout
    quiet = run(["q", "-a", "kb"])
    assert "calling primary" not in quiet.stderr


# --- wiring: config, articles, product ----------------------------------------------------


def test_config_error_exits_78_naming_file_line_and_key(home: Path, engine: Any) -> None:
    (home / "support-ask.yaml").write_text(CONFIG.replace("product: Acme Cloud", "prodct: Acme"))
    out = run(["q", "-a", "kb"])
    assert out.exit_code == 78
    assert "support-ask.yaml:1" in out.stderr and "prodct" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_missing_config_flag_file_exits_78(home: Path, engine: Any) -> None:
    out = run(["q", "-a", "kb", "--config", "nope.yaml"])
    assert out.exit_code == 78
    assert "nope.yaml" in out.stderr


def test_no_config_uses_the_bundled_default_and_says_so(home: Path, engine: Any) -> None:
    (home / "support-ask.yaml").unlink()
    engine()
    out = run(["How do I reset my password?", "-a", "kb"])
    assert out.exit_code == 0
    assert "no config found; using the bundled default" in out.stderr


@pytest.mark.parametrize("where", ["missing", "empty", "binary"])
def test_articles_that_cannot_be_read_exit_66(home: Path, engine: Any, where: str) -> None:
    fake = engine()
    folder = home / "bad-kb"
    if where != "missing":
        folder.mkdir()
    if where == "binary":
        (folder / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff")
    out = run(["q", "-a", str(folder)])
    assert out.exit_code == 66
    assert str(folder) in out.stderr
    assert "fix:" in out.stderr
    assert fake.requests == []


def test_articles_and_product_reach_the_request(home: Path, engine: Any) -> None:
    fake = engine()
    assert run(["q", "-a", "kb", "--product", "Globex"]).exit_code == 0
    request = fake.requests[0]
    assert [a.title for a in request.articles] == ["Reset your password"]
    assert "Globex" in request.system and "Acme Cloud" not in request.system
    assert "Open Settings, then Reset password." in request.system
    run(["q", "-a", "kb"])
    assert "Acme Cloud" in fake.requests[1].system


def test_deployment_flag_uses_only_those_in_config_order(home: Path, engine: Any) -> None:
    fake = engine()
    assert run(["q", "-a", "kb", "-d", "local", "-d", "primary"]).exit_code == 0
    config = fake.kwargs["config"]
    assert [d.name for d in config.deployments] == ["primary", "local"]
    assert config.long_context is None


def test_an_unknown_deployment_flag_is_a_usage_error_with_a_suggestion(
    home: Path, engine: Any
) -> None:
    fake = engine()
    out = run(["q", "-a", "kb", "-d", "fallbak", "--json"])
    assert out.exit_code == 2
    assert "no deployment named 'fallbak'" in out.stderr
    assert "did you mean 'fallback'?" in out.stderr
    assert fake.requests == []


def test_budget_and_timeout_flags_bind_every_deployment(home: Path, engine: Any) -> None:
    (home / "support-ask.yaml").write_text(
        CONFIG.replace(
            "    base_url: http://127.0.0.1:9\n",
            "    base_url: http://127.0.0.1:9\n    policy: {timeout: 50, budget: 60}\n",
        )
    )
    fake = engine()
    assert run(["q", "-a", "kb", "--budget", "4.5", "--timeout", "2"]).exit_code == 0
    config = fake.kwargs["config"]
    policies = [config.policy, *(d.policy for d in config.deployments)]
    assert [(p.budget, p.timeout) for p in policies] == [(4.5, 2.0)] * 4
    assert config.deployments[1].policy.retries == config.policy.retries


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_budget_that_is_not_seconds_is_a_usage_error(home: Path, engine: Any, value: str) -> None:
    fake = engine()
    out = run(["q", "-a", "kb", "--budget", value])
    assert out.exit_code == 2
    assert "--budget" in out.stderr or "budget" in out.stderr.lower()
    assert fake.requests == []


def test_state_flag_is_the_store_the_engine_gets(home: Path, engine: Any) -> None:
    fake = engine()
    run(["q", "-a", "kb", "--state", str(home / "elsewhere.json")])
    assert fake.kwargs["store"].path == home / "elsewhere.json"


def test_every_question_is_logged_unless_no_log(home: Path, engine: Any) -> None:
    engine(FELL_BACK)
    run(["q", "-a", "kb"])
    lines = (home / "attempts.jsonl").read_text().splitlines()
    assert [json.loads(line)["deployment"] for line in lines] == ["primary", "primary", "fallback"]
    run(["q", "-a", "kb", "--no-log"])
    assert len((home / "attempts.jsonl").read_text().splitlines()) == 3


def test_no_key_ever_reaches_the_output(
    home: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    for outcome in (result(), FELL_BACK, EXHAUSTED):
        engine(outcome)
        for extra in ([], ["--json"], ["--show-attempts", "--debug"]):
            out = run(["q", "-a", "kb", *extra])
            assert SECRET not in out.stdout and SECRET not in out.stderr


def test_version(home: Path) -> None:
    out = run(["--version"])
    assert out.exit_code == 0
    assert out.stdout.startswith("support-ask ")
