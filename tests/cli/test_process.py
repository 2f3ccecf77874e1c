"""`support-ask` as a real process against provider servers on 127.0.0.1: a pipe, exit
codes, two invocations sharing one state file, and what start-up imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_runner import write_loopback_workdir
from tests.support.helpcentre import age, write_centre
from tests.support.loopback import Exchange, LoopbackServer

pytestmark = pytest.mark.slow  # support-ask processes against a loopback server

ANSWER = "Open Settings, then choose Reset password."


class Providers:
    """One server playing OpenAI (/v1/chat/completions) and Anthropic (/v1/messages).

    `primary_status` makes every OpenAI call fail with that status (None: answer);
    `primary_headers` go with each of its replies (its rate-limit headers).
    """

    def __init__(self) -> None:
        self.primary_status: int | None = None
        self.fallback_status: int | None = None
        self.primary_headers: dict[str, str] = {}
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        if ex.path.endswith("/chat/completions"):
            if self.primary_status is not None:
                error = {"message": "Rate limit reached", "type": "requests"}
                ex.respond(
                    self.primary_status,
                    {"error": {**error, "code": "rate_limit_exceeded"}},
                    headers=self.primary_headers,
                )
                return
            ex.respond(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": ANSWER},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
                },
                headers=self.primary_headers,
            )
        elif ex.path.endswith("/messages"):
            if self.fallback_status is not None:
                ex.respond(
                    self.fallback_status,
                    {"type": "error", "error": {"type": "authentication_error", "message": "no"}},
                )
                return
            ex.respond(
                200,
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": "From the fallback: " + ANSWER}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 8},
                },
            )
        else:
            ex.respond(404, {"error": {"message": f"no route {ex.path}"}})

    def calls(self, suffix: str) -> int:
        return sum(1 for ex in self.server.exchanges if ex.path.endswith(suffix))


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p
    assert not p.server.errors


@pytest.fixture
def workdir(tmp_path: Path, providers: Providers) -> Path:
    base = providers.server.url
    write_loopback_workdir(tmp_path, base, ANSWER, retries=0, budget=10, timeout=5)
    return tmp_path


def support_ask_env(workdir: Path) -> dict[str, str]:
    """The environment of a support-ask run from `workdir`: test keys, its own user dirs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("SUPPORT_ASK_") and k != "NO_COLOR"
    }
    env.update(
        OPENAI_API_KEY="test-openai-key",
        ANTHROPIC_API_KEY="test-anthropic-key",
        XDG_CONFIG_HOME=str(workdir / "xdg"),
        XDG_STATE_HOME=str(workdir / "xdg"),
    )
    return env


def support_ask(
    workdir: Path, *args: str, input: str | None = None, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = support_ask_env(workdir)
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "cli", *args],
        cwd=workdir,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_answers_on_stdout_and_exits_0(workdir: Path, providers: Providers) -> None:
    done = support_ask(workdir, "How do I reset my password?", "-a", "kb")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert "Traceback" not in done.stderr
    sent = providers.server.exchanges[0]
    assert sent.headers["authorization"] == "Bearer test-openai-key"
    assert sent.json()["messages"][-1]["content"] == "How do I reset my password?"


def test_a_question_piped_to_dash(workdir: Path, providers: Providers) -> None:
    done = support_ask(workdir, "-", "-a", "kb", input="How do I reset my password?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert providers.server.exchanges[0].json()["messages"][-1]["content"] == (
        "How do I reset my password?"
    )


def test_two_invocations_share_one_state_file(workdir: Path, providers: Providers) -> None:
    providers.primary_status = 429
    first = support_ask(workdir, "How do I reset?", "-a", "kb", "--show-attempts")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("From the fallback:")
    assert "answered by fallback (anthropic claude-haiku-4-5)" in first.stderr
    assert providers.calls("/chat/completions") == 1

    second = support_ask(workdir, "How do I reset?", "-a", "kb", "--json")
    assert second.returncode == 0, second.stderr
    obj = json.loads(second.stdout)
    assert obj["deployment"] == "fallback"
    assert obj["attempts"][0]["deployment"] == "primary"
    assert obj["attempts"][0]["decision"] == "skipped"
    assert "cooling" in obj["attempts"][0]["detail"]
    assert providers.calls("/chat/completions") == 1  # not called again

    listed = support_ask(workdir, "cooldowns", "--json")
    assert [c["deployment"] for c in json.loads(listed.stdout)] == ["primary"]


def test_every_deployment_failing_exits_69_with_json(workdir: Path, providers: Providers) -> None:
    providers.primary_status = 401
    providers.fallback_status = 401
    done = support_ask(workdir, "How do I reset?", "-a", "kb", "--json")
    assert done.returncode == 69, done.stderr
    obj = json.loads(done.stdout)
    assert obj["status"] == "failed" and obj["answer"] is None
    assert {d["name"] for d in obj["error"]["deployments"]} == {"primary", "fallback"}
    assert "test-openai-key" not in done.stdout + done.stderr


def test_version_imports_neither_typer_nor_rich(workdir: Path) -> None:
    done = support_ask(workdir, "--version", python_flags=("-X", "importtime"))
    assert done.returncode == 0
    assert done.stdout.startswith("support-ask ")
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert not {m for m in imported if m.split(".")[0] in ("typer", "rich", "httpx", "yaml")}
    # The entry point answers it with the `cli` package alone: each module of the layout
    # found and loaded on the way (cli.shell, cli.runtime, ...) costs what it does.
    ours = {m for m in imported if m.split(".")[0] in ("cli", "gateway", "prompts")}
    assert ours <= {"cli", "cli.__main__"}


@pytest.mark.parametrize(
    "args", [("--version",), ("How do I reset my password?", "-a", "kb", "--json")]
)
def test_a_script_installed_before_the_entry_point_moved_still_runs(
    workdir: Path, providers: Providers, args: tuple[str, ...]
) -> None:
    # The console script of a virtualenv installed before then imports cli.shell.app:main.
    script = "import sys; from cli.shell.app import main; sys.argv[0] = 'support-ask'; main()"
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=workdir,
        env=support_ask_env(workdir),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if args == ("--version",):
        assert done.stdout.startswith("support-ask ")
    else:
        assert json.loads(done.stdout)["answer"] == ANSWER


def test_the_root_help_builds_no_command_to_list_it(workdir: Path) -> None:
    # The list shows each command's summary (cli.shell.listing): importing and building the
    # lazy commands' modules would be most of what the help costs.
    from cli.shell.routing import LAZY_COMMANDS

    # The modules loaded, read at exit: -X importtime misses importlib.import_module's.
    code = (
        "import atexit, runpy, sys; "
        "atexit.register(lambda: print(*sys.modules, file=sys.stderr)); "
        "runpy.run_module('cli', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"],
        cwd=workdir,
        env=support_ask_env(workdir),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in LAZY_COMMANDS)
    assert not set(done.stderr.split()) & set(LAZY_COMMANDS.values())


def test_the_common_path_imports_only_what_it_needs(workdir: Path, providers: Providers) -> None:
    done = support_ask(workdir, "How do I reset?", "-a", "kb", python_flags=("-X", "importtime"))
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert not {m for m in imported if m.startswith(_NOT_FOR_AN_ANSWER)}


# What an answered question never needs. Typer is skipped for a plain question
# (cli.shell.fastpath); rich is needed only for a table; the tokenizer only when a window is at
# stake; other adapters never; Redis only when the state is a redis:// URL; sqlite3 only
# for a help centre kept in an index; html.parser only for an HTML article, and lxml and a
# pool of processes only for a first index of many; the classifier
# (gateway.classify.errors) only when something failed.
_NOT_FOR_AN_ANSWER = (
    "typer",
    "rich",
    "tiktoken",
    "pydantic",
    "gateway.providers.gemini",
    "redis",
    "gateway.state.redis",
    "sqlite3",
    "_sqlite3",
    "html.parser",
    "lxml",
    "concurrent",
    "multiprocessing",
    "gateway.knowledge.reading",
    "gateway.classify.errors",
)


# ... nor, offline, what only a provider over HTTP or a failure needs; nor dataclasses
# (and with it inspect): a frozen dataclass compiles its methods when its class is defined,
# where a gateway.record costs next to nothing (httpx imports inspect for itself).
_NOR_OFFLINE = (
    "httpx",
    "secrets",
    "platformdirs",
    "hashlib",
    "random",
    "datetime",
    "yaml",
    "dataclasses",
    "inspect",
)


def _imported_by_a_second_offline_question(tmp_path: Path) -> set[str]:
    """The modules the second of two offline questions over `tmp_path/kb` imports (no
    config, no keys; the first caches the bundled config and builds any index)."""
    env = support_ask_env(tmp_path)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        del env[name]
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    question = ["How do I reset my password?", "-a", "kb"]
    for _ in ("the first run caches the bundled config", "the next one is measured"):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "cli", *question],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    assert ANSWER in done.stdout
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines()}


def test_the_offline_answer_imports_only_what_it_needs(tmp_path: Path) -> None:
    """No config and no keys: the bundled default's LLM deployments are skipped and the
    local one answers from the help centre, importing neither httpx nor the classifier,
    nor `secrets` (with it hmac, random and OpenSSL's hashlib) for the question's id, nor
    platformdirs for the user dirs its XDG variables name, nor hashlib (only a cooldown's
    key is digested), random (only a backoff's jitter) or datetime (one log timestamp); and
    once the bundled config is cached, not yaml."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "reset.md").write_text("# Reset your password\n\n" + ANSWER + "\n")
    imported = _imported_by_a_second_offline_question(tmp_path)
    assert not {m for m in imported if m.startswith((*_NOT_FOR_AN_ANSWER, *_NOR_OFFLINE))}


def test_a_question_over_a_kept_index_imports_neither_openssl_nor_datetime(
    tmp_path: Path,
) -> None:
    """A help centre large enough to be kept in an index is found by a digest of its paths
    on every question: made with the interpreter's own SHA-256, not hashlib's OpenSSL
    (about 11 M instructions to load); and SQLite's C module is used without the sqlite3
    package's date adapters, which import datetime (about 5 M)."""
    kb = tmp_path / "kb"
    write_centre(kb, 30)
    age(kb / "reset.md", "# Reset your password\n\n" + ANSWER + "\n")
    imported = _imported_by_a_second_offline_question(tmp_path)
    assert list((tmp_path / "xdg" / "support-ask" / "index").glob("*.sqlite"))
    assert "_sqlite3" in imported  # the kept index was what answered
    assert not {m for m in imported if m.startswith(("hashlib", "_hashlib", "datetime"))}


def test_shell_completion_completes_command_names(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "_SUPPORT_ASK_COMPLETE": "complete_bash",
        "COMP_WORDS": "support-ask sim",
        "COMP_CWORD": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cli"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["simulate"]
