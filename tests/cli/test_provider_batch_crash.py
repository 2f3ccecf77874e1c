"""A provider batch job survives a real crash mid-poll: `support-ask batch --status ID` run
as a process, SIGKILLed while it waits on a look at the job (the simulator holds that look
until the kill), then resumed in the same home and from a second home sharing the same
real redis-server. Every question ends with exactly one record in each output, answered
the right way, and no output holds a partial line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.simulate.batch import BatchPlan, OpenAIBatchServer
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.paths import REPO
from tests.support.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.slow  # real processes, a real redis-server

KEY = "sk-test-crash-0123456789abcdef"
RESET = "Open Settings, then Security, and choose Reset password."
REFUND = "Refunds for an annual plan are paid back within five days."
QUESTIONS = [
    {"id": "A1", "question": "How do I reset my password?"},  # the batch errors it
    {"id": "A2", "question": "When are refunds for an annual plan paid back?"},
    {"id": "A3", "question": "Can I adopt a giraffe through your zoo programme?"},  # handoff
]
LOOKS = 6  # looks the job takes to end
HOLD = (2, 4)  # the looks (counted across processes) held until their process is killed


class Provider:
    """The OpenAI Batch API simulator and a chat endpoint for the engine's rescues, on
    127.0.0.1. The looks numbered in `HOLD` are held, unanswered, until `release`."""

    def __init__(self) -> None:
        self.batches = OpenAIBatchServer(BatchPlan(looks=LOOKS, errored=frozenset({0})), key=KEY)
        self.looks = 0
        self.holding = {n: threading.Event() for n in HOLD}
        self.release = {n: threading.Event() for n in HOLD}
        self.chats = 0
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        if ex.path.startswith("/v1/chat/completions"):
            self.chats += 1
            message = {"role": "assistant", "content": "Rescued [1]."}
            ex.respond(
                200,
                {
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                },
            )
            return
        if ex.method == "GET" and ex.path.startswith("/v1/batches/"):
            self.looks += 1
            if self.looks in self.holding:
                self.holding[self.looks].set()  # the process is mid-poll now
                self.release[self.looks].wait(30)
                return  # its process is gone: nothing to answer
        url = f"http://127.0.0.1{ex.path}"
        status, body, headers = self.batches.serve(ex.method, url, ex.headers, ex.body)
        ex.respond(status, body, headers=headers)


@pytest.fixture
def provider() -> Iterator[Provider]:
    p = Provider()
    with p.server:
        yield p
    assert not p.server.errors


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def home(tmp_path: Path, name: str, provider: Provider, redis: RedisServer) -> Path:
    """A machine: its config (the state in the shared Redis), help centre and questions."""
    where = tmp_path / name
    (where / "kb").mkdir(parents=True)
    (where / "kb" / "reset.md").write_text(f"# Reset your password\n\n{RESET}\n")
    (where / "kb" / "refunds.md").write_text(f"# Refunds\n\n{REFUND}\n")
    (where / "in.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (where / "support-ask.yaml").write_text(
        f"""\
product: Acme Cloud
policy: {{retries: 0, budget: 20, timeout: 10}}
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    base_url: {provider.server.url}/v1
    context_window: 128000
long_context: null
state: {{url: '{redis.url}', timeout: 2, connect_timeout: 2}}
log: {{enabled: false}}
"""
    )
    return where


def env(where: Path) -> dict[str, str]:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("SUPPORT_ASK_")
    }
    out.update(
        OPENAI_API_KEY=KEY,
        HOME=str(where),
        SUPPORT_ASK_CONFIG=str(where / "support-ask.yaml"),
        XDG_CONFIG_HOME=str(where / "xdg"),
        XDG_STATE_HOME=str(where / "xdg"),
        XDG_CACHE_HOME=str(where / "xdg"),
        PYTHONPATH=str(REPO),
    )
    return out


def argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", "batch", *args, "-a", "kb"]


def run(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(*args), cwd=where, env=env(where), capture_output=True, text=True, timeout=60
    )


def killed_mid_poll(where: Path, provider: Provider, look: int, *args: str) -> None:
    """Run `args` in `where` and SIGKILL it while the simulator holds its `look`-th look."""
    proc = subprocess.Popen(
        argv(*args),
        cwd=where,
        env=env(where),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert provider.holding[look].wait(60), "the poll never reached that look"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        provider.release[look].set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def whole_lines(out: Path) -> list[dict[str, Any]]:
    """The records of an output, which holds no partial line (none at all if absent)."""
    if not out.exists():
        return []
    raw = out.read_text()
    assert raw == "" or raw.endswith("\n"), "a partial last line"
    return [json.loads(line) for line in raw.splitlines()]


def test_a_job_killed_mid_poll_is_resumed_here_and_from_a_second_home(
    tmp_path: Path, provider: Provider, redis: RedisServer
) -> None:
    a, b = home(tmp_path, "a", provider, redis), home(tmp_path, "b", provider, redis)
    sent = run(a, "in.jsonl", "--provider-batch")
    assert sent.returncode == 0, sent.stderr
    job_id = sent.stdout.strip()
    assert list(provider.batches.jobs) == [job_id]

    poll = ("--status", job_id, "--poll-every", "0.05", "-o", "out.jsonl")
    killed_mid_poll(a, provider, HOLD[0], *poll)  # the first machine, at its second look
    assert whole_lines(a / "out.jsonl") == []
    killed_mid_poll(b, provider, HOLD[1], "in.jsonl", *poll)  # the second, sharing Redis
    assert whole_lines(b / "out.jsonl") == []

    resume = ("--provider-batch", "--resume", "--poll-every", "0.05", "-o", "out.jsonl")
    resumed = run(a, "in.jsonl", *resume)
    assert resumed.returncode == 5, resumed.stderr  # A3 is handed off
    assert list(provider.batches.jobs) == [job_id]  # collected, not sent again
    collected = run(b, "in.jsonl", *poll)
    assert collected.returncode == 5, collected.stderr

    for where in (a, b):
        out = whole_lines(where / "out.jsonl")
        assert [r["id"] for r in out] == ["A1", "A2", "A3"]  # each once, in input order
        assert [r["answered_via"] for r in out] == ["engine", "batch", "not_asked"]
        assert out[0]["answer"].startswith("Rescued") and out[1]["status"] == "answered"
    assert provider.chats == 2  # the errored one, asked again by each collector
