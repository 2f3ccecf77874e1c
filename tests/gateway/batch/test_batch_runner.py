"""The batch runner's threads and its limiter, with fake questions: how many are in flight,
what a rate limit does to that, stopping, and what is written."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator

import pytest

from gateway.batch import BadLine, BatchRunner, Limiter, Question, RecordWriter, read_items
from gateway.clock import SystemClock, VirtualClock
from gateway.model import Attempt, ErrorKind, Outcome, Result, Route, Status

# -- the limiter, on virtual time ---------------------------------------------------------


def signal(kind: ErrorKind = ErrorKind.RATE_LIMIT, wait: float = 0.0) -> Attempt:
    decision = Outcome.RETRY if wait else Outcome.FAIL_OVER
    return Attempt("primary", 1, 429, kind, decision, wait, 0.1)


def fill(limiter: Limiter) -> list[object]:
    tickets = []
    while (t := limiter.acquire(0)) is not None:
        tickets.append(t)
    return tickets


def finish(limiter: Limiter, ticket: object, *attempts: Attempt) -> None:
    with limiter.running(ticket):  # type: ignore[arg-type]
        for attempt in attempts:
            limiter.observe(attempt)


def test_the_limiter_admits_the_concurrency_and_no_more():
    limiter = Limiter(3, clock=VirtualClock())
    tickets = fill(limiter)
    assert len(tickets) == 3
    finish(limiter, tickets[0])
    assert limiter.acquire(0) is not None and limiter.acquire(0) is None


def test_a_rate_limit_halves_the_limit_once_per_storm():
    limiter = Limiter(8, clock=VirtualClock())
    tickets = fill(limiter)
    finish(limiter, tickets[0], signal())
    assert limiter.state().limit == 4
    # The others started before the cut: their 429s are the same storm, not a new one.
    for t in tickets[1:4]:
        finish(limiter, t, signal())
    assert limiter.state().limit == 4
    assert limiter.state().signals == 4
    # A question admitted after the cut that is limited again is a new signal.
    for t in tickets[4:]:
        finish(limiter, t)
    late = limiter.acquire(0)
    assert late is not None
    finish(limiter, late, signal())
    assert limiter.state().limit == 2
    assert limiter.state().lowest == 2


def test_clean_questions_grow_the_limit_back_one_per_limits_worth_up_to_the_concurrency():
    limiter = Limiter(8, clock=VirtualClock())
    first, *others = fill(limiter)
    for t in others:
        finish(limiter, t)
    finish(limiter, first, signal())  # 8 -> 4
    grown = []
    for _ in range(40):
        t = limiter.acquire(0)
        assert t is not None
        finish(limiter, t)
        grown.append(limiter.state().limit)
    assert grown[0] == 4 and grown[-1] == 8
    assert 8 <= grown.index(6) <= 12  # about limit clean questions per step
    assert max(grown) == 8


def test_the_limit_never_drops_below_one():
    limiter = Limiter(2, clock=VirtualClock())
    for _ in range(5):
        t = limiter.acquire(0)
        assert t is not None
        finish(limiter, t, signal())
    assert limiter.state().limit == 1
    assert limiter.acquire(0) is not None


def test_the_shared_allowances_calls_at_once_bound_the_batch_from_its_start():
    limiter = Limiter(8, clock=VirtualClock(), start=2)
    assert len(fill(limiter)) == 2
    assert limiter.ceiling == 2  # and it never grows past them
    assert len(fill(Limiter(3, clock=VirtualClock(), start=16))) == 3


def test_a_wait_for_the_shared_allowance_pauses_new_starts_without_a_cut():
    clock = VirtualClock()
    limiter = Limiter(4, clock=clock)
    first, *_ = fill(limiter)
    waited = Attempt("primary", 0, None, None, Outcome.WAITED, 2.0, 0.0, "waited", "KEY")
    finish(limiter, first, waited)
    assert limiter.acquire(0) is None  # a question started now would wait as long
    assert limiter.state().limit == 4 and limiter.state().signals == 0
    clock.advance(2.0)
    assert limiter.acquire(0) is not None


def test_a_retry_after_wait_pauses_new_starts_until_it_is_over():
    clock = VirtualClock()
    limiter = Limiter(4, clock=clock)
    t = limiter.acquire(0)
    finish(limiter, t, signal(wait=2.0))
    assert limiter.state().paused_for == pytest.approx(2.0)
    assert limiter.acquire(0) is None  # a free slot, but the server asked for a pause
    clock.advance(2.0)
    assert limiter.acquire(0) is not None


def test_an_overload_slows_down_too_and_a_quota_failure_does_not():
    limiter = Limiter(8, clock=VirtualClock())
    t1, t2 = fill(limiter)[:2]
    finish(limiter, t1, signal(ErrorKind.QUOTA))
    assert limiter.state().limit == 8 and limiter.state().signals == 0
    finish(limiter, t2, signal(ErrorKind.OVERLOADED))
    assert limiter.state().limit == 4


# -- the runner ---------------------------------------------------------------------------


def result(status: Status = Status.ANSWERED, deployment: str | None = "primary") -> Result:
    return Result(status, "an answer", deployment, "openai", "m", Route.NORMAL, 10, 0.01, ())


class Records:
    def result(self, question: Question, r: Result) -> dict[str, object]:
        return {"status": str(r.status), "question": question.text}

    def bad_line(self, bad: BadLine) -> dict[str, object]:
        return {"status": "fatal", "reason": bad.reason}

    def crashed(self, question: Question, exc: Exception) -> dict[str, object]:
        return {"status": "failed", "crash": str(exc)}


class Out(io.BytesIO):
    def lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.getvalue().splitlines()]


def lines(n: int, *, bad: frozenset[int] = frozenset()) -> list[bytes]:
    return [b"\n" if i in bad else f"question {i}?\n".encode() for i in range(1, n + 1)]


def runner(
    source: object,
    ask: object,
    *,
    out: Out,
    concurrency: int = 4,
    done: frozenset[object] = frozenset(),
) -> BatchRunner:
    clock = SystemClock()
    return BatchRunner(
        read_items(
            source,
        ),  # type: ignore[arg-type]
        ask=ask,  # type: ignore[arg-type]
        records=Records(),
        writer=RecordWriter(out),
        limiter=Limiter(concurrency, clock=clock),
        clock=clock,
        by_fallback=lambda r: r.deployment != "primary",
        done=done,  # type: ignore[arg-type]
    )


class Gauge:
    """A fake ask that counts how many run at once."""

    def __init__(self, hold: float = 0.01) -> None:
        self._lock = threading.Lock()
        self.now = self.peak = 0
        self.asked: list[object] = []
        self.hold = hold

    def __call__(self, question: Question) -> Result:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.asked.append(question.id)
        time.sleep(self.hold)
        with self._lock:
            self.now -= 1
        return result()


def test_every_question_gets_one_record_with_its_id_and_no_more_than_j_run_at_once():
    out, gauge = Out(), Gauge()
    progress = runner(lines(30, bad=frozenset({5})), gauge, out=out, concurrency=4).run()

    got = out.lines()
    assert sorted(r["id"] for r in got) == list(range(1, 31))
    assert {"id": 5, "line": 5, "status": "fatal", "reason": "empty line: no question"} in got
    assert sorted(gauge.asked) == [i for i in range(1, 31) if i != 5]
    assert 1 < gauge.peak <= 4
    assert (progress.asked, progress.answered, progress.invalid, progress.done) == (29, 29, 1, 30)


def test_ids_already_answered_are_skipped_and_counted():
    out, gauge = Out(), Gauge(hold=0)
    progress = runner(lines(5), gauge, out=out, done=frozenset({1, 3})).run()
    assert sorted(gauge.asked) == [2, 4, 5]
    assert sorted(r["id"] for r in out.lines()) == [2, 4, 5]
    assert progress.skipped == 2 and progress.done == 5


def test_a_question_that_crashes_is_a_record_and_the_batch_goes_on():
    out = Out()

    def ask(question: Question) -> Result:
        if question.id == 2:
            raise ValueError("boom")
        return result()

    progress = runner(lines(3), ask, out=out, concurrency=1).run()
    by_id = {r["id"]: r for r in out.lines()}
    assert by_id[2] == {"id": 2, "line": 2, "status": "failed", "crash": "boom"}
    assert by_id[1]["line"] == 1  # an answered record has its line too
    assert by_id[1]["status"] == by_id[3]["status"] == "answered"
    assert progress.failed == 1 and progress.answered == 2


def test_stop_starts_nothing_new_and_lets_the_questions_in_flight_finish():
    out = Out()
    release = threading.Event()
    started: list[object] = []

    def ask(question: Question) -> Result:
        started.append(question.id)
        release.wait(5)
        return result()

    batch = runner(lines(100), ask, out=out, concurrency=3)
    thread = threading.Thread(target=batch.run)
    thread.start()
    deadline = time.monotonic() + 5
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    batch.stop()
    # Every worker is held, so none can have started a fourth; once released, a worker that
    # did not see the stop would take the next question before the run could end.
    release.set()
    thread.join(5)

    assert not thread.is_alive()
    assert sorted(started) == [1, 2, 3]
    assert sorted(r["id"] for r in out.lines()) == [1, 2, 3]  # in flight: finished, written


def test_abort_returns_at_once_and_nothing_is_written_after_it():
    out = Out()
    release = threading.Event()

    workers: set[threading.Thread] = set()
    both = threading.Barrier(3)  # the two in flight, and this test

    def ask(question: Question) -> Result:
        workers.add(threading.current_thread())
        both.wait(5)
        release.wait(5)
        return result()

    batch = runner(lines(10), ask, out=out, concurrency=2)
    returned = threading.Event()
    thread = threading.Thread(target=lambda: (batch.run(), returned.set()))
    thread.start()
    both.wait(5)  # two questions in flight
    batch.abort()
    assert returned.wait(2)
    release.set()
    for worker in workers:  # the stragglers finish now, and find the writer closed
        worker.join(5)
        assert not worker.is_alive()
    assert out.getvalue() == b""


def test_the_input_is_streamed_not_read_ahead():
    pulled: list[int] = []

    def endless() -> Iterator[bytes]:
        n = 0
        while True:
            n += 1
            pulled.append(n)
            yield f"question {n}?\n".encode()

    out = Out()
    gauge = Gauge(hold=0.002)

    def ask(question: Question) -> Result:
        if question.id == 200:
            batch.stop()
        return gauge(question)

    batch = runner(endless(), ask, out=out, concurrency=4)
    batch.run()
    # Read ahead at most the hand-over queue (2 x j) and what the workers hold.
    assert len(pulled) <= 200 + 3 * 4 + 2
    assert len(out.lines()) >= 200


def test_an_output_that_cannot_be_written_stops_the_batch_and_says_why():
    class Full(Out):
        def write(self, data: object) -> int:
            raise OSError(28, "No space left on device")

    out = Full()
    gauge = Gauge(hold=0)
    batch = runner(lines(1000), gauge, out=out, concurrency=2)
    with pytest.raises(OSError, match="No space"):
        batch.run()
    assert len(gauge.asked) < 50  # it stopped, rather than ask 1,000 questions into the void


def test_the_reader_and_the_workers_never_take_a_stop_signal() -> None:
    """A Ctrl-C the kernel gave a worker would wait for its provider call (start_daemon);
    the dispatcher's thread (here the test's) keeps them."""
    import signal as signals

    from gateway.clock import STOPS

    def mask() -> set[int]:
        return set(signals.pthread_sigmask(signals.SIG_BLOCK, []))

    read: list[set[int]] = []
    asked: list[set[int]] = []

    def source() -> Iterator[bytes]:
        read.append(mask())
        yield from lines(6)

    def ask(question: Question) -> Result:
        asked.append(mask())
        return result()

    runner(source(), ask, out=Out(), concurrency=3).run()
    assert read and read[0] >= STOPS
    assert len(asked) == 6 and all(each >= STOPS for each in asked)
    assert not STOPS & mask()
