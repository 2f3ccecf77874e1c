"""Personal data end to end, as a real process against providers on 127.0.0.1: what the
customer pasted reaches no provider, no log, no state and no error; the answer printed
has it back; every fallback was sent the same masked text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_runner import write_loopback_workdir
from tests.support.loopback import Exchange, LoopbackServer

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
PHONE = "+44 20 7946 0958"
QUESTION = f"How do I reset my password? I'm {EMAIL}, card {CARD}, call {PHONE}. Order 100234556."
ANSWER = "We sent the reset link to [EMAIL_1]; card [CARD_1] was not charged. Ref [PHONE_2]."


class Providers:
    """OpenAI rate-limits, quoting the question back in its error (as some proxies do);
    Anthropic answers with the placeholders, streamed with one cut inside `[EMAIL_1]`."""

    def __init__(self) -> None:
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        body = ex.json()
        if ex.path.endswith("/chat/completions"):
            said = body["messages"][-1]["content"]
            ex.respond(429, {"error": {"message": f"Rate limit for: {said}", "code": "rate_limit"}})
            return
        if not body.get("stream"):
            ex.respond(
                200,
                {
                    "type": "message",
                    "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": ANSWER}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            )
            return
        ex.start()
        cut = ANSWER.index("[EMAIL_1]") + 4
        ex.send('event: message_start\ndata: {"type":"message_start","message":{"model":"m"}}\n\n')
        for piece in (ANSWER[:cut], ANSWER[cut:]):
            delta = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": piece}}
            ex.send(f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n")
        stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
        ex.send(f"event: message_delta\ndata: {json.dumps(stop)}\n\n")
        ex.send('event: message_stop\ndata: {"type":"message_stop"}\n\n')
        ex.end()

    def sent(self) -> list[str]:
        return [ex.body.decode() for ex in self.server.exchanges]


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p


@pytest.fixture
def workdir(tmp_path: Path, providers: Providers) -> Path:
    write_loopback_workdir(
        tmp_path,
        providers.server.url,
        "Open Settings.",
        retries=0,
        budget=10,
        timeout=5,
        min_relevance=0,  # the question's card and order words are not in the one article
    )
    config = tmp_path / "support-ask.yaml"
    config.write_text(
        config.read_text().replace(
            "  path: attempts.jsonl\n", "  path: attempts.jsonl\n  include_text: true\n"
        )
    )
    return tmp_path


def support_ask(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORT_ASK_")}
    env.update(
        OPENAI_API_KEY="corp-Gw-7f3a9c1e55d0b2aa9e41",
        ANTHROPIC_API_KEY="team-Relay-0b2aa9e41c7f3a9c",
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
        timeout=60,
    )


def leaks(text: str) -> list[str]:
    return [v for v in (EMAIL, CARD, PHONE, CARD.replace(" ", "")) if v in text]


def test_no_provider_log_state_or_error_sees_what_the_customer_pasted(
    workdir: Path, providers: Providers
) -> None:
    done = support_ask(workdir, QUESTION, "-a", "kb", "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["answer"] == (
        f"We sent the reset link to {EMAIL}; card {CARD} was not charged. Ref [PHONE_2]."
    )
    assert report["masked"] == {"email": 1, "phone": 1, "card": 1, "iban": 0}
    assert "[PHONE_2]" in done.stderr and "made it up" in done.stderr
    # Both deployments were sent the very same masked question; the order number stays.
    masked = "I'm [EMAIL_1], card [CARD_1], call [PHONE_1]. Order 100234556."
    openai, anthropic = (json.loads(b)["messages"][-1]["content"] for b in providers.sent())
    assert masked in openai and openai == anthropic
    assert leaks("\n".join(providers.sent())) == []
    # The rate limit's message quoted the question: only its placeholders reach the JSON.
    assert "Rate limit for: How do I reset" in json.dumps(report["attempts"])
    files = [workdir / "attempts.jsonl", workdir / "state.json"]
    logged = "\n".join(f.read_text() for f in files)
    assert masked in logged  # include_text: the question is logged, masked
    assert leaks(logged + done.stderr + json.dumps(report["attempts"])) == []


def test_a_streamed_answer_gets_the_values_back_across_a_cut_placeholder(
    workdir: Path, providers: Providers
) -> None:
    done = support_ask(workdir, QUESTION, "-a", "kb", "--stream")

    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"We sent the reset link to {EMAIL}; card {CARD} was not charged. Ref [PHONE_2].\n"
    )
    assert leaks("\n".join(providers.sent())) == []


def test_privacy_mask_false_sends_the_text_as_written(workdir: Path, providers: Providers) -> None:
    config = workdir / "support-ask.yaml"
    config.write_text(config.read_text() + "privacy:\n  mask: false\n")

    done = support_ask(workdir, QUESTION, "-a", "kb", "--json")

    assert done.returncode == 0, done.stderr
    assert EMAIL in providers.sent()[0]
    assert json.loads(done.stdout)["masked"] == {}


def test_batch_masks_each_line_and_writes_the_answer_with_its_values(
    workdir: Path, providers: Providers
) -> None:
    lines = [{"id": "T-1", "question": QUESTION}, {"id": "T-2", "question": "mail bob@example.org"}]
    (workdir / "tickets.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    done = support_ask(workdir, "batch", "tickets.jsonl", "-a", "kb", "--concurrency", "1")

    assert done.returncode == 0, done.stderr
    records = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert records["T-1"]["answer"].startswith(f"We sent the reset link to {EMAIL};")
    assert records["T-2"]["masked"]["email"] == 1
    sent = "\n".join(providers.sent())
    assert leaks(sent) == [] and "bob@example.org" not in sent
    assert "bob@example.org" not in (workdir / "attempts.jsonl").read_text()
