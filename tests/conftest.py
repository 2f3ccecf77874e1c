"""Every test runs as a user with no keys and an empty home: nothing it does can read or
write the real user's config, state, cache or log, or reach a provider with a real key."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

# A suite started as a background job of a shell without job control (`scripts/check &` in
# a script) inherits SIGINT ignored, and so does every process it starts: a user's
# background job is meant to outlive a Ctrl-C, and support-ask leaves it so. The tests that
# interrupt a run (tests/cli/test_contract.py, tests/cli/test_batch.py) would then wait for
# an exit that never comes. A handler set here is reset to the default when a child execs,
# so the processes the tests start can be interrupted as a user's foreground ones are.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _outlive_hangups(signum: int, frame: object) -> None:
    """The suite's own SIGHUP, under `nohup`: still ignored."""


# Likewise a suite started under `nohup` (as a long run on a shared machine is) inherits
# SIGHUP ignored, which support-ask keeps (cli.runtime.signals): the SIGHUP test then waited
# 30 s for an exit that never came. A handler that does nothing is also reset when a child
# execs, so the suite outlives a hangup as nohup asked and the processes it starts do not.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, _outlive_hangups)

_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY")
_OURS = ("SUPPORT_ASK_CONFIG", "SUPPORT_ASK_STATE", "SUPPORT_ASK_LOG")


@pytest.fixture(autouse=True)
def _isolated_user(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home: Path = tmp_path_factory.mktemp("user")
    for var, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    for var in (*_KEYS, *_OURS):
        monkeypatch.delenv(var, raising=False)


# --- a user's working directory, for the commands run through Typer's runner -------------


@pytest.fixture
def cli_config() -> str:
    """The support-ask.yaml that `home` writes: a module using `home` defines its own."""
    raise NotImplementedError("a test module that uses `home` defines a `cli_config` fixture")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_config: str) -> Path:
    """The working directory: `cli_config` as ./support-ask.yaml, one article in ./kb, and
    the state file and attempt log beside them; no colour or width settings inherited."""
    for var in ("NO_COLOR", "COLUMNS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "attempts.jsonl"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "support-ask.yaml").write_text(cli_config)
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "reset.md").write_text("# Reset your password\n\nOpen Settings, then Reset password.\n")
    return tmp_path
