"""Secrets end to end, as a real process against a server on 127.0.0.1.

A key variable whose value cannot be a key is refused before any call (exit 78, the
variable named, nothing of its value anywhere). A key that an echoing proxy puts back into
the answer, the stream or an error appears in no output and no file the tool writes.
The keys here have no known shape, so only their values can give them away.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.secrets.shapes import PLACEHOLDER
from tests.support.cli_runner import write_loopback_workdir
from tests.support.loopback import Exchange, LoopbackServer

pytestmark = pytest.mark.slow  # support-ask processes against a loopback server

OPENAI_KEY = "corp-Gw-7f3a9c1e55d0b2aa9e41"
ANTHROPIC_KEY = "team-Relay-0b2aa9e41c7f3a9c"


class EchoProxy:
    """An OpenAI-compatible proxy that quotes the caller's key back: in the answer, split
    across stream deltas, or (`fail`) in a 429's message. Its Anthropic side always
    answers 401 quoting every key it has seen, the other deployment's too."""

    def __init__(self) -> None:
        self.fail = False
        self.seen: list[str] = []
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        if ex.path.endswith("/messages"):
            self.seen.append(ex.headers.get("x-api-key", ""))
            message = f"none of these keys is valid: {', '.join(self.seen)}"
            ex.respond(
                401,
                {"type": "error", "error": {"type": "authentication_error", "message": message}},
            )
            return
        key = ex.headers.get("authorization", "").removeprefix("Bearer ")
        self.seen.append(key)
        if self.fail:
            message = f"Rate limit reached for key {key}"
            ex.respond(429, {"error": {"message": message, "code": "rate_limit_exceeded"}})
            return
        text = f"Your proxy saw {key}. Open Settings, then Reset password."
        if not ex.json().get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}}
            ex.respond(200, {"choices": [{**choice, "finish_reason": "stop"}], "model": key})
            return
        ex.start()
        # The key straddles three deltas, as a proxy's tokenizer would cut it.
        cut = text.index(key)
        pieces = [text[: cut + 5], text[cut + 5 : cut + 14], text[cut + 14 :]]
        for piece in pieces:
            delta = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            ex.send(f"data: {json.dumps(delta)}\n\n")
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        ex.send(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n")
        ex.end()

    def calls(self) -> int:
        return len(self.server.exchanges)


@pytest.fixture
def proxy() -> Iterator[EchoProxy]:
    p = EchoProxy()
    with p.server:
        yield p


@pytest.fixture
def workdir(tmp_path: Path, proxy: EchoProxy) -> Path:
    write_loopback_workdir(
        tmp_path, proxy.server.url, "Open Settings.", retries=0, budget=10, timeout=5
    )
    config = tmp_path / "support-ask.yaml"
    # The question and answer logged too: the attempt log must hold no key either.
    text = config.read_text().replace(
        "  path: attempts.jsonl\n", "  path: attempts.jsonl\n  include_text: true\n"
    )
    assert "include_text: true" in text
    config.write_text(text)
    return tmp_path


def support_ask(
    workdir: Path, *args: str, openai_key: str = OPENAI_KEY
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("SUPPORT_ASK_")
    }
    env.update(
        OPENAI_API_KEY=openai_key,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        XDG_CONFIG_HOME=str(workdir / "xdg"),
        XDG_STATE_HOME=str(workdir / "xdg"),
        XDG_CACHE_HOME=str(workdir / "xdg"),
    )
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def written(workdir: Path, done: subprocess.CompletedProcess[str]) -> str:
    """Everything the run wrote: stdout, stderr, the state file, the attempt log."""
    files = [workdir / "state.json", workdir / "attempts.jsonl"]
    return "\n".join([done.stdout, done.stderr, *(f.read_text() for f in files if f.exists())])


# -- a value that cannot be a key ----------------------------------------------------------

BAD_VALUES = {
    "two lines": f"{OPENAI_KEY}\nsecond-line-of-the-file",
    "a carriage return": f"{OPENAI_KEY[:12]}\r{OPENAI_KEY[12:]}",
    "a terminal escape": f"\x1b[200~{OPENAI_KEY}",
    "a typographic quote": f"\u201c{OPENAI_KEY}\u201d",
}


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_key_variable_that_cannot_be_a_key_is_refused_before_any_call(
    workdir: Path, proxy: EchoProxy, value: str
) -> None:
    for args in (("How do I reset?", "--json", "-v", "--debug"), ("q", "--stream", "-q")):
        done = support_ask(workdir, *args, openai_key=value)

        assert done.returncode == 78, done.stderr
        assert "OPENAI_API_KEY" in done.stderr
        assert "deployments[0].api_key_env" in done.stderr
        everything = written(workdir, done)
        # No piece of the value: not the key in it, nor the line after it.
        for piece in (OPENAI_KEY[:8], OPENAI_KEY[-8:], "second-line"):
            assert piece not in everything
        assert "Traceback" not in done.stderr
    assert proxy.calls() == 0  # no deployment was called, the good one neither
    assert not (workdir / "state.json").exists()  # so nothing was cooled down

    check = support_ask(workdir, "config", "check", openai_key=value)
    assert check.returncode == 78
    assert "OPENAI_API_KEY ✗ unusable" in check.stdout
    assert OPENAI_KEY[:8] not in check.stdout + check.stderr

    as_json = support_ask(workdir, "config", "check", "--json", openai_key=value)
    assert as_json.returncode == 78
    report = json.loads(as_json.stdout)
    assert not report["valid"]
    assert [p["key"] for p in report["problems"]] == ["deployments[0].api_key_env"]
    assert OPENAI_KEY[:8] not in as_json.stdout + as_json.stderr


def test_a_key_with_its_file_newline_at_the_end_is_still_a_key(
    workdir: Path, proxy: EchoProxy
) -> None:
    done = support_ask(workdir, "How do I reset?", openai_key=f"  {OPENAI_KEY}\n")
    assert done.returncode == 0, done.stderr
    assert proxy.server.exchanges[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"


# -- a key echoed back ---------------------------------------------------------------------


def test_a_key_echoed_into_the_answer_is_on_no_output_and_in_no_file(
    workdir: Path, proxy: EchoProxy
) -> None:
    plain = support_ask(workdir, "How do I reset?")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == f"Your proxy saw {PLACEHOLDER}. Open Settings, then Reset password.\n"

    as_json = support_ask(workdir, "How do I reset?", "--json", "-v", "--debug")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["answer"].startswith(f"Your proxy saw {PLACEHOLDER}.")

    for done in (plain, as_json):
        assert OPENAI_KEY not in written(workdir, done)
    # answers logged
    assert f"Your proxy saw {PLACEHOLDER}" in (workdir / "attempts.jsonl").read_text()
    assert proxy.calls() == 2


def test_a_key_split_across_stream_deltas_never_reaches_stdout(
    workdir: Path, proxy: EchoProxy
) -> None:
    plain = support_ask(workdir, "How do I reset?", "--stream")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == f"Your proxy saw {PLACEHOLDER}. Open Settings, then Reset password.\n"

    lines = support_ask(workdir, "How do I reset?", "--stream", "--json")
    assert lines.returncode == 0, lines.stderr
    events = [json.loads(line) for line in lines.stdout.splitlines()]
    deltas = "".join(e["text"] for e in events if e["type"] == "delta")
    assert deltas == events[-1]["answer"] == plain.stdout.rstrip("\n")

    for done in (plain, lines):
        everything = written(workdir, done)
        # No fragment of the key long enough to matter leaked out through a delta either.
        assert OPENAI_KEY[:12] not in everything and OPENAI_KEY[-12:] not in everything


def test_keys_echoed_into_errors_are_in_no_output_no_state_and_no_log(
    workdir: Path, proxy: EchoProxy
) -> None:
    proxy.fail = True
    done = support_ask(workdir, "How do I reset?", "--json", "-v", "--show-attempts")

    assert done.returncode == 69, done.stderr
    report = json.loads(done.stdout)
    assert [a["error_class"] for a in report["attempts"]] == ["rate_limit", "auth"]
    assert (workdir / "state.json").exists()  # both deployments were cooled down
    everything = written(workdir, done)
    assert OPENAI_KEY not in everything and ANTHROPIC_KEY not in everything
    assert f"Rate limit reached for key {PLACEHOLDER}" in done.stdout


def test_a_base_url_with_a_password_is_refused_by_every_command_and_never_shown(
    workdir: Path, proxy: EchoProxy
) -> None:
    config = workdir / "support-ask.yaml"
    base = proxy.server.url.replace("http://", "http://me:url-Pa55word-77@")
    config.write_text(
        config.read_text().replace(f"base_url: {proxy.server.url}/v1", f"base_url: {base}/v1")
    )
    assert "url-Pa55word-77" in config.read_text()
    for args in (("How do I reset?", "--debug", "-v", "--json"), ("config", "check")):
        done = support_ask(workdir, *args)
        assert done.returncode == 78, done.stderr
        assert "deployments[0].base_url" in done.stderr and "api_key_env" in done.stderr
        assert "url-Pa55word-77" not in written(workdir, done)
    assert proxy.calls() == 0
    cache = workdir / "xdg" / "support-ask"
    assert not any("url-Pa55word-77" in f.read_text() for f in cache.rglob("*") if f.is_file())
