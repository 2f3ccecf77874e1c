"""A run stopped while a provider's call waits (Ctrl-C, a stop signal) still says what its
question did: the real engine and adapters over a transport that answers the primary
429 and raises KeyboardInterrupt in the fallback's call, as Ctrl-C does there. (The real
process, stopped by a real SIGINT, is in tests/cli/test_contract.py.)"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.core import TyperCommand

from cli.runtime import signals, started, wiring
from cli.runtime.signals import StopSignal
from cli.shell import app, root
from tests.support.cli_runner import run
from tests.support.provider_fixtures import response

CONFIG = """\
product: Acme Cloud
policy:
  retries: 0
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
"""


@pytest.fixture
def cli_config() -> str:
    return CONFIG


class Providers:
    """The primary rate-limited; the fallback answers, or (`stop`) is interrupted."""

    def __init__(self) -> None:
        self.stop = False
        self.calls: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.calls.append(request.url.path)
        if request.url.path.endswith("/chat/completions"):
            return response("openai/429_rate_limit")
        if self.stop:
            raise KeyboardInterrupt  # what Ctrl-C raises in the waiting thread
        return response("anthropic/message")


@pytest.fixture
def providers(home: Path, monkeypatch: pytest.MonkeyPatch) -> Providers:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-primary-0123456789abcdef")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-fallback-0123456789abcdef")
    fake = Providers()
    real = wiring.build_engine

    def build_engine(config: Any, **kwargs: Any) -> Any:
        return real(config, **{**kwargs, "transport": httpx.MockTransport(fake.handle)})

    monkeypatch.setattr(wiring, "build_engine", build_engine)
    return fake


def ask(home: Path, state: str) -> tuple[int, dict[str, Any], str]:
    out = run(["How do I reset my password?", "-a", "kb", "--json", "--state", str(home / state)])
    return out.exit_code, json.loads(out.stdout), out.stderr


def test_json_lists_the_call_in_flight_as_interrupted_with_its_input(
    home: Path, providers: Providers
) -> None:
    code, answered, stderr = ask(home, "answered.json")
    assert code == 0, stderr
    assert answered["deployment"] == "fallback"

    providers.stop = True
    code, stopped, stderr = ask(home, "stopped.json")
    assert code == 130, stderr
    assert (stopped["status"], stopped["error"]["kind"]) == ("failed", "interrupted")
    assert [(a["deployment"], a["decision"]) for a in stopped["attempts"]] == [
        ("primary", "fail_over"),
        ("fallback", "interrupted"),
    ]
    in_flight = stopped["attempts"][-1]
    assert (in_flight["status"], in_flight["error_class"], in_flight["usage"]) == (
        None,
        None,
        None,
    )
    assert in_flight["key"] == "ANTHROPIC_API_KEY"
    # The fallback was sent the same request both times: the same input, counted alike.
    assert stopped["input_tokens"] == answered["input_tokens"] > 0
    assert stopped["articles"] == answered["articles"]
    assert stopped["deployment"] is None and stopped["answer"] is None
    logged = [json.loads(line) for line in (home / "attempts.jsonl").read_text().splitlines()]
    assert [(line["deployment"], line["decision"]) for line in logged[-2:]] == [
        ("primary", "fail_over"),
        ("fallback", "interrupted"),
    ]


@pytest.fixture
def as_main(monkeypatch: pytest.MonkeyPatch) -> None:
    """`app.run` as the entry point calls it, in this process: pytest keeps its own signal
    handlers, and the process start `run` marks is undone after, or every later question
    in this process would be timed from it (and fail, its budget long spent)."""
    monkeypatch.setattr(signals, "stop_on_signals", lambda: None)
    monkeypatch.setattr(started, "_MARKED", None)


def typer_taking(stop: KeyboardInterrupt) -> Any:
    """Building the Typer app (importing typer, the commands) as a stop arrives."""

    def build_app() -> Any:
        raise stop

    return build_app


def typer_parsing(stop: KeyboardInterrupt) -> Any:
    """Typer parsing a command's line as a stop arrives."""

    def parse_args(self: TyperCommand, ctx: Any, args: list[str]) -> list[str]:
        raise stop

    return parse_args


# Where a stop comes before a command's guard: while Typer is imported and built (a tenth
# of a second of every command but a plain question: a traceback and exit 1), and while it
# parses (which Typer ends as a silent exit 130, whichever signal it was: `bench/run stops`
# met a silent 143).
MOMENTS = {
    "building": lambda monkeypatch, stop: monkeypatch.setattr(
        root, "build_app", typer_taking(stop)
    ),
    "parsing": lambda monkeypatch, stop: monkeypatch.setattr(
        TyperCommand, "parse_args", typer_parsing(stop)
    ),
}
STOPS = pytest.mark.parametrize(
    ("stop", "code", "said"),
    [
        (KeyboardInterrupt(), 130, "interrupted (Ctrl-C)"),
        (StopSignal(signal.SIGTERM), 143, "stopped by SIGTERM"),
        (StopSignal(signal.SIGHUP), 129, "stopped by SIGHUP"),
    ],
    ids=["Ctrl-C", "SIGTERM", "SIGHUP"],
)
# A command line the fast path leaves to Typer.
ASK_JSON = ["ask", "How do I reset my password?", "--budget", "soon", "--json"]


def stopped_run(capsys: pytest.CaptureFixture[str], run: Any) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of an entry point's run that a stop ended."""
    with pytest.raises(SystemExit) as done:
        try:
            run()
        except KeyboardInterrupt:  # not pytest's own: it would end the whole session
            pytest.fail("the stop escaped the entry point, as a traceback")
    out, err = capsys.readouterr()
    assert isinstance(done.value.code, int)
    return done.value.code, out, err


def assert_said(out: str, err: str, said: str, *, json_out: bool) -> None:
    """The stop said on stderr, no traceback; with `ask --json`, its one object on stdout."""
    assert said in err and "Traceback" not in err
    if json_out:
        result = json.loads(out)
        assert result["status"] == "failed" and result["answer"] is None
        assert result["error"]["kind"] == "interrupted"
    else:
        assert out == ""


@STOPS
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("json_out", [False, True], ids=["index", "ask --json"])
def test_a_stop_before_the_command_runs_is_said_with_its_code_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_main: None,
    json_out: bool,
    moment: str,
    stop: KeyboardInterrupt,
    code: int,
    said: str,
) -> None:
    MOMENTS[moment](monkeypatch, stop)
    argv = ASK_JSON if json_out else ["index", "kb"]
    exit_code, out, err = stopped_run(capsys, lambda: app.run(argv, "support-ask"))
    assert exit_code == code
    assert_said(out, err, said, json_out=json_out)


class CtrlCOnImport:
    """A finder that takes a Ctrl-C the first time `name` is imported, as one arriving
    while Python reads that module does."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.taken = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == self.name and not self.taken:
            self.taken = True
            raise KeyboardInterrupt
        return None


@pytest.mark.parametrize("json_out", [False, True], ids=["index", "ask --json"])
def test_a_ctrl_c_while_the_command_line_is_imported_is_said_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_main: None,
    json_out: bool,
) -> None:
    """The entry point imports the command line before `run` can take a stop: a Ctrl-C
    then (a few milliseconds of every run) printed a KeyboardInterrupt traceback."""
    import sys

    import cli.shell
    from cli import __main__ as entry

    monkeypatch.delitem(sys.modules, "cli.shell.app")
    monkeypatch.setattr(cli.shell, "app", app)  # restored after, as the import replaces it
    finder = CtrlCOnImport("cli.shell.app")
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    exit_code, out, err = stopped_run(
        capsys, lambda: entry.main(ASK_JSON if json_out else ["index", "kb"])
    )
    assert finder.taken
    assert exit_code == 130
    assert_said(out, err, "interrupted (Ctrl-C)", json_out=json_out)
