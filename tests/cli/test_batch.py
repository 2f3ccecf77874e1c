"""`support-ask batch` as a real process against provider servers on 127.0.0.1: records,
bad lines, the attempt log, a server that rate-limits, a cooldown shared by the workers,
SIGTERM and SIGKILL followed by `--resume`, and the progress display on a terminal.

The servers' waits are real but short (tens of milliseconds); nothing asserts how long
anything took.
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.secrets.shapes import PLACEHOLDER
from tests.cli.test_terminal import (
    CURSOR_UP,
    END,
    HIDE_CURSOR,
    SHOW_CURSOR,
    Terminal,
    environment,
    frames,
    plain,
)
from tests.support.cli_runner import write_loopback_workdir
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.provider_fixtures import case

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and a pty"),
    pytest.mark.slow,  # a support-ask batch process per test
]

ARTICLE = "Open Settings, then choose Reset password."


def completion(text: str) -> dict[str, Any]:
    """A real chat.completion (from the provider fixtures), answering `text`."""
    body = copy.deepcopy(case("openai/chat_completion")["body"])
    body["choices"][0]["message"]["content"] = text
    return body  # type: ignore[no-any-return]


def message(text: str) -> dict[str, Any]:
    """A real Anthropic message (from the provider fixtures), answering `text`."""
    body = copy.deepcopy(case("anthropic/message")["body"])
    body["content"][0]["text"] = text
    return body  # type: ignore[no-any-return]


def rate_limited(ms: int) -> tuple[dict[str, object], dict[str, str]]:
    body = {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    return body, {"retry-after-ms": str(ms)}


class Providers:
    """OpenAI (primary) and Anthropic (fallback) on one server; each answer echoes the
    question. `delay` holds each answer back; `primary` may replace the primary's play."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.primary = self.answer_primary
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.limited = 0
        self.questions: list[str] = []
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        try:
            self.route(ex)
        except json.JSONDecodeError:
            # A client killed while sending (the hard-kill test) leaves half a body: that
            # is the client going away, not a fault of the handler.
            return

    def route(self, ex: Exchange) -> None:
        if ex.path.endswith("/chat/completions"):
            with self._lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            try:
                self.primary(ex)
            finally:
                with self._lock:
                    self.in_flight -= 1
        elif ex.path.endswith("/messages"):
            question = ex.json()["messages"][-1]["content"]
            ex.respond(200, message(f"fallback: {question}"))
        else:
            ex.respond(404, {"error": {"message": f"no route {ex.path}"}})

    def answer_primary(self, ex: Exchange) -> None:
        question = ex.json()["messages"][-1]["content"]
        with self._lock:
            self.questions.append(question)
        if self.delay and not ex.pause(self.delay):
            return
        ex.respond(200, completion(f"answer: {question}"))

    def limit(self, ex: Exchange, status: int = 429, ms: int = 100) -> None:
        with self._lock:
            self.limited += 1
        body, headers = rate_limited(ms)
        ex.respond(status, body, headers=headers)

    def calls(self, suffix: str) -> int:
        return sum(1 for ex in self.server.exchanges if ex.path.endswith(suffix))


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p
    assert not p.server.errors


def workdir(path: Path, providers: Providers, *, retries: int = 2, budget: int = 20) -> Path:
    # The questions are numbered ("Question number 3?"), about nothing the one article
    # says: the floor is off, so every one is asked.
    write_loopback_workdir(
        path,
        providers.server.url,
        ARTICLE,
        retries=retries,
        budget=budget,
        timeout=10,
        min_relevance=0,
    )
    return path


def batch(
    cwd: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", "batch", *args],
        cwd=cwd,
        env=env or environment(cwd),
        input=input,
        capture_output=True,
        text=True,
        timeout=END,
        check=False,
    )


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "batch", *args],
        cwd=cwd,
        env=environment(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def records(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def questions(n: int) -> str:
    return "".join(f"Question number {i}?\n" for i in range(1, n + 1))


def wait_for_lines(path: Path, n: int) -> None:
    deadline = time.monotonic() + END
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never reached {n} lines")


# -- what is written ------------------------------------------------------------------------


def asked(record: dict[str, object]) -> list[dict[str, object]]:
    """A record's attempts but its waits: a cold start's workers wait for the first call's
    headers (`gateway.limits.rules`), whichever worker that happens to be."""
    attempts: list[dict[str, object]] = record["attempts"]  # type: ignore[assignment]
    return [a for a in attempts if a["decision"] != "waited"]


def test_each_line_gets_its_id_and_the_object_ask_json_prints_and_bad_lines_their_own(
    tmp_path: Path, providers: Providers
) -> None:
    work = workdir(tmp_path, providers)
    (work / "in.jsonl").write_text(
        '{"id": "T-1", "question": "How do I reset my password?"}\n'
        "this line is not json\n"
        '{"id": "T-3", "question": "Can I get a refund?", "product": "Acme Mail"}\n'
        '{"id": "T-4"}\n'
        '{"id": 5, "question": "How do I export my data?"}\n'
    )

    run = batch(work, "in.jsonl", "-a", "kb", "-j", "3")

    assert run.returncode == 65, run.stderr  # bad input lines: the data was wrong
    assert "Traceback" not in run.stderr
    got = {r["id"]: r for r in records(run.stdout)}
    assert set(got) == {"T-1", None, "T-3", "T-4", 5}
    assert got["T-1"]["answer"] == "answer: How do I reset my password?"
    assert got[5]["status"] == "answered"
    assert got[None]["line"] == 2 and got[None]["status"] == "fatal"
    assert got[None]["error"]["kind"] == "bad_input"  # type: ignore[index]
    assert "line 2: not JSON" in got[None]["error"]["message"]  # type: ignore[index]
    assert got["T-4"]["line"] == 4 and "no question" in got["T-4"]["error"]["message"]  # type: ignore[index]
    # The line's own product reached the prompt.
    prompts = [ex.json()["messages"][0]["content"] for ex in providers.server.exchanges]
    assert sum("Acme Mail" in p for p in prompts) == 1

    # Exactly what `ask --json` prints for the same question, but for the timings.
    ask = subprocess.run(
        [sys.executable, "-m", "cli", "How do I reset my password?", "-a", "kb", "--json"],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        timeout=END,
        check=False,
    )
    alone = json.loads(ask.stdout)
    assert got["T-1"]["line"] == 1 and got[5]["line"] == 5  # an answered line has its number
    mine = {k: v for k, v in got["T-1"].items() if k not in ("id", "line")}
    assert list(mine) == list(alone)  # the same fields, in the same order
    for record in (mine, alone):
        record["attempts"] = asked(record)  # a worker may have waited for the first call
        record["elapsed_s"] = 0
        for attempt in record["attempts"]:  # type: ignore[attr-defined]
            attempt["elapsed_s"] = 0
    assert mine == alone

    # Every question went to the attempt log, as `ask` logs it: `stats` counts the batch.
    stats = subprocess.run(
        [sys.executable, "-m", "cli", "stats", "--json"],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        timeout=END,
        check=True,
    )
    assert json.loads(stats.stdout)["questions"] == 3 + 1  # the batch's three, and the ask
    assert "batch done: 3 asked" in run.stderr
    assert "3 answered, 0 handed off, 0 refused, 0 failed, 2 bad lines" in run.stderr


def test_plain_text_from_stdin_is_numbered_by_line_over_kept_alive_connections(
    tmp_path: Path, providers: Providers
) -> None:
    work = workdir(tmp_path, providers)
    run = batch(work, "-", "-a", "kb", "-j", "2", input=questions(12))
    assert run.returncode == 0, run.stderr
    got = {r["id"]: r["answer"] for r in records(run.stdout)}
    assert got == {i: f"answer: Question number {i}?" for i in range(1, 13)}
    # One engine: each worker keeps its connection alive from one question to the next.
    assert providers.server.connections <= 2


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["in.txt", "--resume"], 2, "--resume needs --out FILE"),
        (["missing.txt"], 66, "does not exist"),
        (["empty.txt"], 66, "the input holds no questions"),
        (["in.txt", "-j", "0"], 2, "--concurrency must be at least 1"),
        (["in.txt", "-o", "no/such/folder/out.jsonl"], 74, "cannot write no/such/folder"),
    ],
)
def test_usage_and_input_mistakes_say_what_to_do(
    tmp_path: Path, providers: Providers, args: list[str], code: int, says: str
) -> None:
    work = workdir(tmp_path, providers)
    (work / "in.txt").write_text(questions(2))
    (work / "empty.txt").write_text("")
    run = batch(work, *args, "-a", "kb")
    assert run.returncode == code, run.stderr
    assert says in run.stderr and "Traceback" not in run.stderr
    assert providers.calls("/chat/completions") == 0


# -- one engine, many workers ----------------------------------------------------------------


def test_a_cooldown_one_worker_takes_keeps_every_other_worker_off_that_deployment(
    tmp_path: Path, providers: Providers
) -> None:
    """The first 429 asks for a short wait (that worker retries after it); every later one
    for ten minutes, which does not fit the budget: that worker fails over and cools
    primary. The worker waiting to retry must not call primary again."""
    seen = {"n": 0}

    def primary(ex: Exchange) -> None:
        seen["n"] += 1
        providers.limit(ex, ms=400 if seen["n"] == 1 else 600_000)

    providers.primary = primary
    work = workdir(tmp_path, providers, retries=3)
    run = batch(work, "-", "-a", "kb", "-j", "2", input=questions(6))

    assert run.returncode == 0, run.stderr
    got = records(run.stdout)
    assert {r["deployment"] for r in got} == {"fallback"}
    # Two calls in all: one per worker, at the same moment. No retry, no later question.
    assert providers.calls("/chat/completions") == 2
    retried = [asked(r) for r in got if len(asked(r)) == 3]
    assert len(retried) == 1
    skipped = retried[0][1]
    assert skipped["decision"] == "skipped" and "another question" in skipped["detail"]
    # The cooldown is in the state store too, for the next invocation (a rate limit is
    # the key's: primary's key is cooled, for primary alone).
    state = json.loads((work / "state.json").read_text())
    assert "key:primary/OPENAI_API_KEY" in state["cooldowns"]


def test_a_server_that_rate_limits_slows_the_batch_down_instead_of_multiplying_the_storm(
    tmp_path: Path, providers: Providers
) -> None:
    """The primary serves two requests at a time; any more get a 429 asking for 100 ms.
    Eight workers would meet it again and again; the batch halves what it has in flight
    and pauses new starts for the server's wait."""

    def primary(ex: Exchange) -> None:
        if providers.in_flight > 2:
            providers.limit(ex, ms=100)
            return
        if ex.pause(0.03):
            question = ex.json()["messages"][-1]["content"]
            ex.respond(200, completion(f"answer: {question}"))

    providers.primary = primary
    work = workdir(tmp_path, providers, retries=8)
    # Every 429 retried, so the batch's own slowdown shows: the fleet's retry budget, which
    # would send them to the fallback instead, is tests/gateway/engine/test_fleet_limits.py's.
    config = work / "support-ask.yaml"
    config.write_text(
        config.read_text().replace("  retries: 8\n", "  retries: 8\n  retry_budget: 8\n")
    )
    n = 40
    run = batch(work, "-", "-a", "kb", "-j", "8", input=questions(n))

    assert run.returncode == 0, run.stderr
    got = records(run.stdout)
    assert len(got) == n and {r["deployment"] for r in got} == {"primary"}
    assert providers.limited > 0
    # Well under one rate limit per question: without the slowdown, eight workers against
    # room for two meet more 429s than there are questions (about 45 here).
    assert providers.limited < 0.75 * n, providers.limited
    summary = run.stderr.splitlines()[-1]
    assert "slowed down after" in summary and "rate limits (lowest" in summary


# -- stopping and resuming -------------------------------------------------------------------


def test_sigterm_finishes_the_questions_in_flight_and_resume_asks_only_the_rest(
    tmp_path: Path, providers: Providers
) -> None:
    providers.delay = 0.2
    work = workdir(tmp_path, providers)
    (work / "in.txt").write_text(questions(30))
    out = work / "out.jsonl"

    proc = start(work, "in.txt", "-a", "kb", "-j", "3", "--out", "out.jsonl")
    wait_for_lines(out, 3)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=END)

    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert "stopping: no new questions" in stderr
    assert "batch stopped" in stderr and "SIGTERM" in stderr and "--resume" in stderr
    first = records(out.read_text())  # every line whole
    # Each question that reached the server was finished and written: none is lost.
    assert len(first) == len(providers.questions) < 30
    assert {r["status"] for r in first} == {"answered"}

    providers.delay = 0.0
    again = batch(work, "in.txt", "-a", "kb", "-j", "3", "--out", "out.jsonl", "--resume")

    assert again.returncode == 0, again.stderr
    final = records(out.read_text())
    assert sorted(r["id"] for r in final) == list(range(1, 31))
    assert len(providers.questions) == 30  # no question was asked twice
    assert f"{len(first)} already answered" in again.stderr


def test_a_hard_kill_leaves_a_torn_line_that_resume_repairs(
    tmp_path: Path, providers: Providers
) -> None:
    providers.delay = 0.05
    work = workdir(tmp_path, providers)
    (work / "in.txt").write_text(questions(40))
    out = work / "out.jsonl"

    proc = start(work, "in.txt", "-a", "kb", "-j", "4", "--out", "out.jsonl")
    wait_for_lines(out, 5)
    proc.kill()
    proc.communicate(timeout=END)
    written = records(out.read_text())
    with out.open("a") as f:  # what a kill in the middle of a write leaves
        f.write('{"id": 99, "schema_version": 1, "status": "answ')
    asked_before = len(providers.questions)

    again = batch(work, "in.txt", "-a", "kb", "-j", "4", "--out", "out.jsonl", "--resume")

    assert again.returncode == 0, again.stderr
    assert "was cut short" in again.stderr
    final = records(out.read_text())  # raises if any line is not whole JSON
    answered = [r["id"] for r in final if r["status"] == "answered"]
    assert sorted(answered) == list(range(1, 41))  # each id once
    # Only the questions with no record were asked again (those in flight at the kill too).
    assert len(providers.questions) - asked_before == 40 - len(written)


# -- progress --------------------------------------------------------------------------------


def test_a_terminal_sees_a_live_progress_bar_then_the_summary(
    tmp_path: Path, providers: Providers
) -> None:
    providers.delay = 0.05
    work = workdir(tmp_path, providers)
    (work / "in.txt").write_text(questions(20))
    terminal = Terminal()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "batch", "in.txt", "-a", "kb", "-j", "2", "-o", "out.jsonl"],
        cwd=work,
        env=environment(work),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal.slave,
    )
    terminal.start()
    try:
        proc.communicate(timeout=END)
    finally:
        if proc.poll() is None:
            proc.kill()
    drawn = terminal.drawn()

    assert proc.returncode == 0, drawn
    assert CURSOR_UP in drawn and drawn.startswith(HIDE_CURSOR)
    assert drawn.rfind(SHOW_CURSOR) > drawn.rfind(HIDE_CURSOR)
    shown = frames(drawn)
    counts = [f for f in shown if "/20" in f and "answered" in f]
    assert len({f for f in counts}) >= 3, shown  # it moved as questions finished
    assert any("q/s" in f and "ETA" in f and "fallback" in f for f in counts)
    final = plain(drawn)
    assert "20/20" in final and "20 answered" in final
    assert "batch done: 20 asked" in final
    assert len(records((work / "out.jsonl").read_text())) == 20


@pytest.mark.parametrize("quiet", [False, True], ids=["piped", "quiet"])
def test_off_a_terminal_or_quiet_progress_is_a_plain_line_now_and_then(
    tmp_path: Path, providers: Providers, quiet: bool
) -> None:
    providers.delay = 0.05
    work = workdir(tmp_path, providers)
    flags = ["-q"] if quiet else []
    run = batch(
        work, "-", "-a", "kb", "-j", "1", "--progress-every", "0.2", *flags, input=questions(12)
    )

    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("batch: ")]
    assert len(lines) >= 2, run.stderr
    assert all("answered" in line and "q/s" in line for line in lines)
    assert run.stderr.splitlines()[-1].startswith("batch done: 12 asked")
    if quiet:
        assert "warning" not in run.stderr and "no config" not in run.stderr


def test_a_key_a_provider_echoes_never_reaches_the_output_or_the_log(
    tmp_path: Path, providers: Providers
) -> None:
    def primary(ex: Exchange) -> None:
        ex.respond(200, completion(f"your header was {ex.headers['authorization']}"))

    providers.primary = primary
    work = workdir(tmp_path, providers)
    run = batch(work, "-", "-a", "kb", "-o", "out.jsonl", input=questions(2))

    assert run.returncode == 0, run.stderr
    written = (work / "out.jsonl").read_text()
    assert f"your header was Bearer {PLACEHOLDER}" in written
    for where in (written, run.stdout, run.stderr, (work / "attempts.jsonl").read_text()):
        assert "test-openai-key" not in where


def test_a_batch_stopped_while_writing_to_stdout_says_to_use_out(
    tmp_path: Path, providers: Providers
) -> None:
    providers.delay = 0.2
    work = workdir(tmp_path, providers)
    (work / "in.txt").write_text(questions(30))
    proc = start(work, "in.txt", "-a", "kb", "-j", "2")
    deadline = time.monotonic() + END
    while len(providers.questions) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=END)

    assert proc.returncode == 143, stderr
    summary = stderr.splitlines()[-1]
    assert "results on stdout cannot be resumed; run again with --out FILE" in summary
    assert "run again with --resume" not in stderr  # --resume cannot read stdout back
    assert all(isinstance(r["line"], int) for r in records(stdout))


def test_a_second_interrupt_stops_at_once_and_leaves_only_whole_lines(
    tmp_path: Path, providers: Providers
) -> None:
    providers.delay = 30  # every answer takes longer than the test will wait
    work = workdir(tmp_path, providers, budget=60)
    (work / "in.txt").write_text(questions(10))
    proc = start(work, "in.txt", "-a", "kb", "-j", "2", "--out", "out.jsonl")
    deadline = time.monotonic() + END
    while len(providers.questions) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=10)  # not the 30 s the answers would take

    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "batch stopped" in stderr and "SIGINT" in stderr
    assert (work / "out.jsonl").read_text() == ""  # nothing half-written
