"""How many questions a batch keeps in flight, and when it may start the next one.

N workers that meet a 429 each on their own multiply the storm: every one of them backs
off, comes back at about the same moment and is limited again, while new questions keep
arriving at the limited deployment. The limiter slows the whole batch down instead:

- **AIMD on questions in flight**, as TCP does with its window. It starts at `-j N`.
  A slow-down signal (a `rate_limit` or `overloaded` attempt, seen the moment the engine
  records it) halves the limit, at most once per generation: signals from questions that
  started before the last cut belong to the same storm and do not cut again. Every
  question that then finishes without a signal adds 1/limit, so the limit grows back by
  about one per limit's worth of clean questions, up to N.
- **The server's wait is a pause on new starts.** A retry the engine takes after a rate
  limit waits what the server asked (Retry-After) or its backoff; no new question starts
  before that wait is over, since it would meet the same limit. Questions already in
  flight carry on under their own retry rules and budget.
- **The fleet's shared allowance is known, not discovered.** The limit starts at the
  calls at once the first deployment's allowances allow, when fewer than `-j` (`start`);
  and a question that waits for its place in the allowance (a `waited` attempt) pauses new
  starts for that long, as a server's wait does, without a cut: nothing was refused, and
  a question started meanwhile would only spend its budget waiting in the same queue.

The limit never drops below 1, so a batch always makes progress. All state is behind one
condition; the engine's attempt hook calls `observe` on the worker's own thread, which is
how a signal is tied to the question (and generation) it came from.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.model import Attempt, ErrorKind, Outcome
from gateway.record import record
from gateway.seams import Clock

SLOW_DOWN = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.OVERLOADED})
DECREASE = 0.5


@record
class LimiterState:
    limit: int  # questions allowed in flight now
    in_flight: int
    paused_for: float  # seconds until new questions may start (0: not paused)
    signals: int  # slow-down signals seen so far
    lowest: int  # the lowest limit reached


class Ticket:
    """One admitted question: its generation, and whether it met a slow-down signal."""

    __slots__ = ("generation", "slowed")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.slowed = False


class Limiter:
    def __init__(self, ceiling: int, *, clock: Clock, start: int | None = None) -> None:
        """`ceiling`: the most in flight (`-j`); `start`: the calls at once the shared
        allowance allows (None: no such limit), which bounds it from the start."""
        if ceiling < 1:
            raise ValueError("the concurrency must be at least 1")
        if start is not None:
            ceiling = max(1, min(ceiling, start))
        self.ceiling = ceiling
        self._clock = clock
        self._cond = threading.Condition()
        self._limit = float(ceiling)
        self._in_flight = 0
        self._paused_until = 0.0
        self._generation = 0
        self._signals = 0
        self._lowest = ceiling
        self._local = threading.local()

    def _allowed(self) -> int:
        return max(1, int(self._limit))

    def acquire(self, timeout: float) -> Ticket | None:
        """A ticket to start one question, or None if none came within `timeout` s (so
        the caller can look at a stop request between tries)."""
        with self._cond:
            ticket = self._admit()
            if ticket is None and timeout > 0:
                wait = timeout
                paused = self._paused_until - self._clock.monotonic()
                if paused > 0:
                    wait = min(wait, paused)
                self._cond.wait(wait)
                ticket = self._admit()
            return ticket

    def _admit(self) -> Ticket | None:
        if self._in_flight >= self._allowed():
            return None
        if self._clock.monotonic() < self._paused_until:
            return None
        self._in_flight += 1
        return Ticket(self._generation)

    @contextmanager
    def running(self, ticket: Ticket) -> Iterator[None]:
        """Around one question on a worker thread: signals seen meanwhile are its own."""
        self._local.ticket = ticket
        try:
            yield
        finally:
            self._local.ticket = None
            self._release(ticket)

    def give_back(self, ticket: Ticket) -> None:
        """Return a ticket whose question was never started: nothing was learnt from it."""
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def _release(self, ticket: Ticket) -> None:
        with self._cond:
            self._in_flight -= 1
            if not ticket.slowed:
                self._limit = min(float(self.ceiling), self._limit + 1.0 / self._limit)
            self._cond.notify_all()

    def observe(self, attempt: Attempt) -> None:
        """The engine's attempt hook: a rate limit or an overload slows the batch down; a
        wait for the shared allowance pauses new starts."""
        if attempt.outcome is Outcome.WAITED:
            if attempt.wait_s > 0:
                with self._cond:
                    until = self._clock.monotonic() + attempt.wait_s
                    self._paused_until = max(self._paused_until, until)
            return
        if attempt.error_class not in SLOW_DOWN:
            return
        ticket: Ticket | None = getattr(self._local, "ticket", None)
        with self._cond:
            self._signals += 1
            generation = self._generation if ticket is None else ticket.generation
            if ticket is not None:
                ticket.slowed = True
            if generation == self._generation:
                self._limit = max(1.0, self._limit * DECREASE)
                self._generation += 1
                self._lowest = min(self._lowest, self._allowed())
            if attempt.outcome is Outcome.RETRY and attempt.wait_s > 0:
                until = self._clock.monotonic() + attempt.wait_s
                self._paused_until = max(self._paused_until, until)

    def state(self) -> LimiterState:
        with self._cond:
            paused = max(0.0, self._paused_until - self._clock.monotonic())
            return LimiterState(
                self._allowed(), self._in_flight, paused, self._signals, self._lowest
            )

    def wake(self) -> None:
        """Wake a waiting `acquire` (a stop was asked for)."""
        with self._cond:
            self._cond.notify_all()
