"""A support chat end to end, as a real process against providers on 127.0.0.1: the
thread reaches the provider as turns (masked), a malformed thread is exit 66 before any
call, the log holds counts only, and `batch` lines carry their own threads."""

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

THREAD = [
    {"role": "customer", "content": "I can't log in, I'm jane@example.com"},
    {"role": "agent", "content": "Use Forgot password? on the sign-in page for a reset link."},
    {"role": "customer", "content": "the link says it expired, how long does it last?"},
]


class Provider:
    """An OpenAI-compatible server answering every question with one sentence."""

    def __init__(self) -> None:
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        choice = {"index": 0, "message": {"role": "assistant", "content": "Sixty minutes."}}
        ex.respond(200, {"choices": [{**choice, "finish_reason": "stop"}], "model": "m"})

    def bodies(self) -> list[dict[str, object]]:
        return [ex.json() for ex in self.server.exchanges]


@pytest.fixture
def provider() -> Iterator[Provider]:
    p = Provider()
    with p.server:
        yield p


@pytest.fixture
def workdir(tmp_path: Path, provider: Provider) -> Path:
    write_loopback_workdir(
        tmp_path,
        provider.server.url,
        "The link works once and expires after 60 minutes.",
        retries=0,
        budget=10,
        timeout=5,
        min_relevance=0,  # "how long does it last" is in other words than the one article's
    )
    (tmp_path / "chat.json").write_text(json.dumps(THREAD))
    return tmp_path


def support_ask(
    workdir: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORT_ASK_")}
    env.update(
        OPENAI_API_KEY="corp-Gw-7f3a9c1e55d0b2aa9e41",
        XDG_CONFIG_HOME=str(workdir / "xdg"),
        XDG_STATE_HOME=str(workdir / "xdg"),
        XDG_CACHE_HOME=str(workdir / "xdg"),
    )
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=workdir,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_thread_reaches_the_provider_as_turns_and_its_last_message_is_the_question(
    workdir: Path, provider: Provider
) -> None:
    done = support_ask(workdir, "--thread", "chat.json", "-a", "kb", "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["answer"] == "Sixty minutes."
    assert report["thread"] == {"turns": 2, "left_out": 0}
    messages = provider.bodies()[0]["messages"]
    assert isinstance(messages, list)
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "I can't log in, I'm [EMAIL_1]"),
        ("assistant", THREAD[1]["content"]),
        ("user", THREAD[2]["content"]),
    ]
    # The log says how much of the thread went, never what it said.
    lines = (workdir / "attempts.jsonl").read_text()
    assert '"turns":2' in lines and "log in" not in lines and "jane" not in lines


def test_a_question_given_is_asked_after_the_whole_thread_read_from_stdin(
    workdir: Path, provider: Provider
) -> None:
    done = support_ask(
        workdir, "--thread", "-", "-a", "kb", "And can I reuse it?", stdin=json.dumps(THREAD)
    )

    assert done.returncode == 0, done.stderr
    messages = provider.bodies()[0]["messages"]
    assert isinstance(messages, list)
    assert len(messages) == 5 and messages[-1]["content"] == "And can I reuse it?"


@pytest.mark.parametrize(
    ("thread", "said"),
    [
        ("not json", "not JSON"),
        (
            '[{"role": "customer", "content": "card 4111 1111 1111 1111"}, {"role": "bot"}]',
            "turn 1",
        ),
        ('[{"role": "customer", "content": ""}]', "turn 0: the message is empty"),
    ],
)
def test_a_malformed_thread_is_exit_66_before_any_call(
    workdir: Path, provider: Provider, thread: str, said: str
) -> None:
    (workdir / "bad.json").write_text(thread)

    done = support_ask(workdir, "--thread", "bad.json", "-a", "kb", "--json")

    assert done.returncode == 66, done.stderr
    assert said in json.loads(done.stdout)["error"]["message"]
    assert "4111" not in done.stdout + done.stderr
    assert provider.bodies() == []


def test_a_missing_thread_file_is_exit_66(workdir: Path, provider: Provider) -> None:
    done = support_ask(workdir, "--thread", "nowhere.json", "-a", "kb")
    assert done.returncode == 66 and "nowhere.json: no such file" in done.stderr


def test_batch_lines_carry_their_own_thread(workdir: Path, provider: Provider) -> None:
    lines = [
        {"id": "chat-1", "thread": THREAD},
        {"id": "chat-2", "question": "Where is my invoice?"},
        {"id": "chat-3", "thread": [{"role": "bot", "content": "x"}]},
    ]
    (workdir / "chats.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    done = support_ask(workdir, "batch", "chats.jsonl", "-a", "kb", "--concurrency", "1")

    records = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert records["chat-1"]["thread"] == {"turns": 2, "left_out": 0}
    assert records["chat-2"]["thread"] is None
    assert "turn 0: role 'bot'" in records["chat-3"]["error"]["message"]
    sent = {len(b["messages"]) for b in provider.bodies()}  # type: ignore[arg-type]
    assert sent == {4, 2}  # system + 2 turns + question; system + question


def test_the_reply_is_asked_in_the_customers_language(workdir: Path, provider: Provider) -> None:
    german = support_ask(
        workdir, "Wie lange ist der Link zum Zurücksetzen gültig?", "-a", "kb", "--json"
    )
    forced = support_ask(
        workdir, "How long is the reset link valid?", "-a", "kb", "--json", "--language", "ES"
    )
    short = support_ask(workdir, "ok?", "-a", "kb", "--json")

    assert json.loads(german.stdout)["language"] == "de"
    assert json.loads(forced.stdout)["language"] == "es"
    assert json.loads(short.stdout)["language"] == "en"  # too short to tell: the default
    systems = [b["messages"][0]["content"] for b in provider.bodies()]  # type: ignore[index]
    assert "Write your reply in German" in systems[0]
    assert "Write your reply in Spanish" in systems[1]


def test_a_language_that_is_no_iso_code_is_a_usage_error(workdir: Path, provider: Provider) -> None:
    done = support_ask(workdir, "hello", "-a", "kb", "--language", "german")
    assert done.returncode == 2 and "ISO 639-1" in done.stderr
    assert provider.bodies() == []
