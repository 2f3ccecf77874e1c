"""The batch loop: read, admit, ask on N workers, write as each question ends.

Three kinds of thread, each with one job:

- a reader turns the input into items and hands them over through a small bounded queue,
  so the input is streamed (memory does not grow with its length) and a pipe that stays
  silent never keeps the loop from noticing a stop;
- the caller's thread (the dispatcher) skips ids already answered, writes bad lines'
  records, and gives each question to a worker once the `Limiter` admits it;
- N workers ask (through the one engine the caller wired into `ask`) and write each
  record the moment it is ready. No result is kept.

`stop()` only sets a flag, so a signal handler may call it: no new question starts,
those in flight finish within their own budget and are written, and `run` returns.
`abort()` (a second Ctrl-C) stops waiting for them; the writer is closed so nothing is
written after the summary, and those questions are asked again on `--resume`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from gateway.batch.limiter import Limiter, Ticket
from gateway.batch.progress import Progress, Tally
from gateway.batch.source import BadLine, Item, ItemId, Question
from gateway.batch.writer import RecordWriter
from gateway.clock import start_daemon
from gateway.model import Result
from gateway.seams import Clock

TICK_S = 0.1  # how often the dispatcher looks at a stop request and reports progress


class Records(Protocol):
    """Builds the object written for each line; the runner puts `id` (and `line`) first."""

    def result(self, question: Question, result: Result) -> Mapping[str, object]: ...

    def bad_line(self, bad: BadLine) -> Mapping[str, object]: ...

    def crashed(self, question: Question, exc: Exception) -> Mapping[str, object]: ...


class InputError(Exception):
    """Reading the input itself failed (not one bad line: the stream broke)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause.strerror or cause))
        self.cause = cause


_END = object()


class _Reader:
    """The input on its own thread, behind a bounded queue."""

    def __init__(self, items: Iterable[Item], size: int) -> None:
        self._items = items
        self._queue: queue.Queue[object] = queue.Queue(maxsize=size)
        self._thread = start_daemon(self._run, "batch-reader")

    def _run(self) -> None:
        try:
            for item in self._items:
                self._queue.put(item)
        except OSError as exc:
            self._queue.put(InputError(exc))
        self._queue.put(_END)

    def get(self, timeout: float) -> object | None:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None


class BatchRunner:
    def __init__(
        self,
        items: Iterable[Item],
        *,
        ask: Callable[[Question], Result],
        records: Records,
        writer: RecordWriter,
        limiter: Limiter,
        clock: Clock,
        by_fallback: Callable[[Result], bool],
        done: frozenset[ItemId] = frozenset(),
        total: int | None = None,
        on_tick: Callable[[Progress], None] | None = None,
        on_crash: Callable[[Question, Exception], None] | None = None,
    ) -> None:
        self._items = items
        self._ask = ask
        self._records = records
        self._writer = writer
        self._limiter = limiter
        self._clock = clock
        self._by_fallback = by_fallback
        self._done = done
        self._total = total
        self._on_tick = on_tick
        self._on_crash = on_crash
        self._tally = Tally()
        self._work: queue.SimpleQueue[tuple[Question, Ticket] | None] = queue.SimpleQueue()
        self._started = clock.monotonic()
        self._stopping = False
        self._aborted = False
        self._write_error: OSError | None = None
        self._last_tick = float("-inf")

    # -- control (signal-safe: flags only) ------------------------------------------------

    def stop(self) -> None:
        self._stopping = True

    def abort(self) -> None:
        self._stopping = self._aborted = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def aborted(self) -> bool:
        return self._aborted

    # -- the loop ---------------------------------------------------------------------------

    def progress(self) -> Progress:
        return self._tally.snapshot(
            total=self._total,
            elapsed=self._clock.monotonic() - self._started,
            limiter=self._limiter.state(),
            stopping=self._stopping,
        )

    def run(self) -> Progress:
        """Ask every question (or until stopped); the counts at the end. Raises InputError
        when the input broke off, and the OSError when the output could not be written,
        after the questions in flight were dealt with."""
        self._started = self._clock.monotonic()
        workers = [
            start_daemon(self._worker, f"batch-worker-{n}") for n in range(self._limiter.ceiling)
        ]
        failure: InputError | None = None
        try:
            failure = self._dispatch(_Reader(self._items, 2 * self._limiter.ceiling))
        finally:
            for _ in workers:
                self._work.put(None)
            self._drain(workers)
            self._writer.close()
        self._tick(final=True)
        if self._write_error is not None:
            raise self._write_error
        if failure is not None:
            raise failure
        return self.progress()

    def _dispatch(self, reader: _Reader) -> InputError | None:
        while not self._stopping:
            self._tick()
            item = reader.get(TICK_S)
            if item is None:
                continue
            if item is _END:
                return None
            if isinstance(item, InputError):
                return item
            if isinstance(item, BadLine):
                self._write({"id": item.id, "line": item.line, **self._records.bad_line(item)})
                self._tally.bad_line()
                continue
            assert isinstance(item, Question)
            if item.id in self._done:
                self._tally.skip()
                continue
            ticket = self._admit()
            if ticket is None:
                return None  # stopped while waiting: this question is left for --resume
            self._work.put((item, ticket))
        return None

    def _admit(self) -> Ticket | None:
        while not self._stopping:
            ticket = self._limiter.acquire(TICK_S)
            if ticket is not None and self._stopping:  # asked for while we waited for it
                self._limiter.give_back(ticket)
                return None
            if ticket is not None:
                return ticket
            self._tick()
        return None

    def _drain(self, workers: list[threading.Thread]) -> None:
        for worker in workers:
            while worker.is_alive() and not self._aborted:
                worker.join(TICK_S)
                self._tick()

    def _worker(self) -> None:
        while (job := self._work.get()) is not None:
            question, ticket = job
            with self._limiter.running(ticket):
                self._one(question)

    def _one(self, question: Question) -> None:
        head = {"id": question.id, "line": question.line}
        try:
            result = self._ask(question)
        except Exception as exc:  # a bug: this question's record says so, the batch goes on
            if self._on_crash is not None:
                self._on_crash(question, exc)
            self._write({**head, **self._records.crashed(question, exc)})
            self._tally.crashed()
            return
        self._write({**head, **self._records.result(question, result)})
        self._tally.result(result, by_fallback=self._by_fallback(result))

    def _write(self, record: Mapping[str, object]) -> None:
        try:
            self._writer.write(record)
        except OSError as exc:  # a full disk, a reader that went away: nothing more can go out
            if self._write_error is None:
                self._write_error = exc
            self.stop()

    def _tick(self, *, final: bool = False) -> None:
        if self._on_tick is None:
            return
        now = self._clock.monotonic()
        if final or now - self._last_tick >= TICK_S:
            self._last_tick = now
            self._on_tick(self.progress())
