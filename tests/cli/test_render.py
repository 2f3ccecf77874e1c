"""The pieces behind stderr: the attempts table and its live countdown, the fallback
notice, colour rules, key redaction in logs, the typo guard, and plain coercion."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from cli.runtime.logsetup import RedactingFilter
from cli.shell.group import AskByDefault
from cli.shell.root import build_app
from cli.terminal.diag import Diag
from cli.terminal.render import LiveAttempts, attempts_table, fallback_notice
from gateway.config import Config, Deployment
from gateway.model import Attempt, ErrorKind, Outcome, ProviderKind, Result, Route, Status
from gateway.secrets.redactor import Redactor
from gateway.secrets.shapes import PLACEHOLDER

CONFIG = Config(
    product="Acme",
    deployments=(
        Deployment("primary", ProviderKind.OPENAI, 128_000, model="gpt-4o-mini"),
        Deployment("fallback", ProviderKind.ANTHROPIC, 200_000, model="claude-haiku-4-5"),
    ),
    long_context=Deployment("long", ProviderKind.GEMINI, 1_000_000, model="gemini-2.5-pro"),
)

RETRY = Attempt("primary", 1, 429, ErrorKind.RATE_LIMIT, Outcome.RETRY, 2.0, 0.1, "slow down")
GAVE_UP = Attempt("primary", 2, 429, ErrorKind.RATE_LIMIT, Outcome.FAIL_OVER, 0.0, 0.1, "")
SKIP = Attempt("primary", 0, None, None, Outcome.SKIPPED, 0.0, 0.0, "OPENAI_API_KEY not set")
SERVED = Attempt("fallback", 1, 200, None, Outcome.ANSWERED, 0.0, 0.4, "")


def served_by(name: str, attempts: tuple[Attempt, ...], route: Route = Route.NORMAL) -> Result:
    provider, model = {
        "primary": ("openai", "gpt-4o-mini"),
        "fallback": ("anthropic", "claude-haiku-4-5"),
        "long": ("gemini", "gemini-2.5-pro"),
        "local": ("local", "local-bm25"),
    }[name]
    return Result(Status.ANSWERED, "ok", name, provider, model, route, 9000, 1.0, attempts)


def render(table: object, width: int = 120) -> str:
    console = Console(file=io.StringIO(), width=width, no_color=True)
    console.print(table)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_a_deployment_that_went_through_several_keys_names_each_call_s_key() -> None:
    from gateway.record import replace

    first = replace(GAVE_UP, key="KEY_A", error_class=ErrorKind.AUTH, status=401)
    second = Attempt("primary", 3, 200, None, Outcome.ANSWERED, 0.0, 0.3, "", "KEY_B")
    text = render(attempts_table([first, second]))
    assert "primary (KEY_A)" in text and "primary (KEY_B)" in text
    one_key = render(attempts_table([replace(RETRY, key="KEY_A"), replace(SERVED, key="FB")]))
    assert "(KEY_A)" not in one_key and "(FB)" not in one_key, "one key each: nothing to say"


def test_table_has_a_row_per_attempt_and_counts_a_wait_down() -> None:
    text = render(attempts_table([RETRY], countdown=1.26))
    assert "primary" in text and "rate_limit" in text and "retry" in text
    assert "1.3s…" in text and "2.0s" not in text
    assert "2.0s" in render(attempts_table([RETRY]))


def test_table_keeps_short_columns_whole_on_a_narrow_terminal() -> None:
    long = Attempt("primary", 1, 429, ErrorKind.RATE_LIMIT, Outcome.FAIL_OVER, 0, 0.1, "x" * 300)
    text = render(attempts_table([long, SERVED], width=80), width=80)
    assert "fail_over" in text and "rate_limit" in text and "fallback" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" in text  # the detail is cut, not wrapped over many lines
    assert len(text.splitlines()) == 6


def test_live_table_counts_down_then_leaves_the_final_table() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, no_color=True)
    with LiveAttempts(console) as live:
        live.add(RETRY)
        live.sleep(0.05)  # the real wait, shown counting down
        live.add(GAVE_UP)
        live.add(SERVED)
    text = out.getvalue()
    assert "s…" in text  # the countdown was drawn
    final = text.rsplit("\x1b[2K", 1)[-1]  # the last frame
    assert "fallback" in final and "answered" in final and "s…" not in final


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (served_by("primary", (SERVED,)), None),
        (
            served_by("fallback", (RETRY, GAVE_UP, SERVED)),
            "answered by fallback (anthropic claude-haiku-4-5) after 3 attempts; "
            "primary: rate_limit",
        ),
        (
            served_by("fallback", (SKIP, SERVED)),
            "answered by fallback (anthropic claude-haiku-4-5) after 1 attempt; "
            "primary: skipped (OPENAI_API_KEY not set)",
        ),
        (
            served_by(
                "local",
                (
                    SKIP,
                    Attempt("fallback", 1, 503, ErrorKind.OVERLOADED, Outcome.FAIL_OVER, 0, 0.1),
                    Attempt("local", 1, None, None, Outcome.ANSWERED, 0, 0.0),
                ),
            ),
            "answered by local (local local-bm25) after 2 attempts; "
            "primary: skipped (OPENAI_API_KEY not set); fallback: overloaded",
        ),
    ],
)
def test_fallback_notice(result: Result, expected: str | None) -> None:
    assert fallback_notice(result, CONFIG) == expected


def test_long_context_route_is_announced() -> None:
    long = Attempt("long", 1, 200, None, Outcome.ANSWERED, 0, 1.0, "")
    notice = fallback_notice(served_by("long", (long,), Route.LONG_CONTEXT), CONFIG)
    assert notice is not None
    assert notice.startswith("routed to the long-context deployment long (gemini")
    assert "9000 tokens" in notice


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color() -> None:
    assert Diag(stream=_Tty(), environ={}).color
    assert not Diag(stream=_Tty(), environ={"NO_COLOR": "1"}).color
    assert not Diag(stream=io.StringIO(), environ={}).color
    assert not Diag(stream=_Tty(), environ={}, quiet=True).animate


def test_plain_diagnostics_are_plain_text() -> None:
    stream = io.StringIO()
    diag = Diag(stream=stream, environ={})
    diag.error("[bold]no[/bold] deployment", fix="set a key")
    diag.warn("careful")
    assert stream.getvalue() == (
        "error: [bold]no[/bold] deployment\n  fix: set a key\nwarning: careful\n"
    )
    quiet = Diag(stream=io.StringIO(), environ={}, quiet=True)
    quiet.warn("hidden")
    quiet.notice("hidden")
    quiet.error("shown")
    assert quiet.stream.getvalue() == "error: shown\n"


def test_redactor_scrubs_keys_in_every_shape() -> None:
    redactor = RedactingFilter(Redactor(["sk-known-secret-123"]))
    text = redactor.scrub(
        "GET https://x/v1beta/models/m:generateContent?key=AIzaSyREALKEY&alt=sse "
        "Authorization: Bearer abc.def-ghi x-api-key: sk-ant-zzz leaked sk-known-secret-123"
    )
    for secret in ("AIzaSyREALKEY", "abc.def-ghi", "sk-ant-zzz", "sk-known-secret-123"):
        assert secret not in text
    assert "alt=sse" in text and f"Bearer {PLACEHOLDER}" in text


def test_redactor_scrubs_formatted_arguments() -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "key %s", ("sk-known-1",), None)
    RedactingFilter(Redactor(["sk-known-1"])).filter(record)
    assert record.getMessage() == f"key {PLACEHOLDER}"


@pytest.mark.parametrize(
    ("args", "to_ask"),
    [
        ([], True),
        (["How do I reset?"], True),
        (["--json", "q"], True),
        (["-"], True),
        (["billing"], True),
        (["simulate"], False),
        (["simulat"], False),
        (["confg", "check"], False),
        (["--help"], False),
        (["--version"], False),
    ],
)
def test_what_goes_to_ask(args: list[str], to_ask: bool) -> None:
    group = AskByDefault(name="support-ask")
    for name in ("ask", "simulate", "cooldowns", "config"):
        group.commands[name] = AskByDefault(name=name)
    assert group.routes_to_default(args) is to_ask


def test_plain_coercion_gives_typed_values_and_rejects_bad_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cli.commands.simulate_cmd as sim

    seen: dict[str, object] = {}

    def capture(opts: sim.SimOptions, diag: Diag) -> int:
        seen["opts"] = opts
        return 0

    monkeypatch.setattr(sim, "run_simulate", capture)
    args = ["simulate", "-n", "3", "-a", "kb", "-a", "more", "--state", "s.json", "-f", "p=429"]
    assert CliRunner().invoke(build_app(), args).exit_code == 0
    opts = seen["opts"]
    assert isinstance(opts, sim.SimOptions)
    assert opts.requests == 3
    assert opts.articles == (Path("kb"), Path("more"))
    assert opts.state == "s.json" and opts.fail == ("p=429",)  # a path or a redis:// URL
    bad = CliRunner().invoke(build_app(), ["simulate", "-n", "three"])
    assert bad.exit_code == 2
    assert "'three' is not a valid int" in bad.stderr


# --- the fast path: the same options as Typer's ask, or no answer at all -------------------


def _typer_ask_options() -> dict[str, tuple[tuple[str, ...], str]]:
    import typer.main

    group = typer.main.get_command(build_app())
    ask = group.commands["ask"]  # type: ignore[attr-defined]
    out = {}
    for param in ask.params:
        if param.param_type_name != "option" or param.name == "show_version":
            continue
        kind = "value"
        if param.count:
            kind = "count"
        elif param.is_flag:
            kind = "flag"
        elif param.multiple:
            kind = "multi"
        out[param.name] = (tuple(sorted(param.opts)), kind)
    return out


def test_fast_path_knows_exactly_the_ask_options() -> None:
    from cli.shell.fastpath import ASK_OPTIONS

    fast_side = {
        name: (tuple(sorted(d.spec.flags)), d.spec.kind.value) for name, d in ASK_OPTIONS.items()
    }
    assert fast_side == _typer_ask_options()


@pytest.mark.parametrize(
    "args",
    [
        ["How do I reset my password?"],
        ["ask", "How", "do", "I", "log", "in?"],
        ["-a", "kb", "-a", "more/x.md", "q", "--json", "--stream"],
        ["q", "-c", "c.yaml", "--state", "s.json", "--product", "Globex", "-q"],
        ["--articles=kb", "--show-attempts", "-v", "-v", "--debug", "q"],
        ["q", "--log", "l.jsonl", "--no-log", "--", "--not-an-option"],
        ["-", "-a", "kb"],
        ["billing"],
        ["q", "-d", "fallback", "--deployment=local", "--budget", "2.5", "--timeout=1"],
        ["help", "me", "log", "in"],
        ["-a", "kb", "--", "stats", "on", "my", "usage"],
    ],
)
def test_fast_path_parses_as_typer_does(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.commands.ask
    from cli.shell.fastpath import parse_ask

    seen: list[object] = []
    monkeypatch.setattr(
        cli.commands.ask, "run_ask", lambda opts, diag, show_help: seen.append(opts) or 0
    )
    assert CliRunner().invoke(build_app(), args).exit_code == 0
    assert parse_ask(args, environ={}, stdin_tty=False) == seen[0]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-h"],
        ["q", "--help"],
        ["simulate"],
        ["simulat"],
        ["cooldowns", "reset"],
        ["-qv", "q"],
        ["q", "--no-such-option"],
        ["q", "-a"],
        ["-a=kb", "q"],
        ["--json=yes", "q"],
        ["q", "--budget", "soon"],
        ["help"],
        ["help", "stats"],
        [],
    ],
)
def test_fast_path_leaves_everything_else_to_typer(args: list[str]) -> None:
    from cli.shell.fastpath import parse_ask

    assert parse_ask(args, environ={}, stdin_tty=True) is None


def test_fast_path_stands_aside_for_shell_completion() -> None:
    from cli.shell.fastpath import parse_ask

    assert parse_ask(["q"], environ={"_SUPPORT_ASK_COMPLETE": "bash_complete"}) is None
    assert parse_ask([], environ={}, stdin_tty=False) is not None  # piped stdin: a question
