"""An attempt's deadlines (the whole attempt, the first token, a stall), enforced on the socket.

httpx's timeouts bound each socket operation, not the call, so a server trickling one
byte a second would never trip them. The client checks the deadlines between chunks on
the injected `Clock`; the watchdog here shuts the socket down when a read is still
blocked in the kernel at a deadline (closing a socket from another thread does not
wake a blocked read; shutting it down does). It starts with the stop signals blocked
(gateway.clock.start_daemon).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable

from gateway.clock import start_daemon
from gateway.model import Timer


class Alarm:
    """One armed action: cancelled before it fires, it never runs."""

    __slots__ = ("_action", "_lock", "cancelled")

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action
        self._lock = threading.Lock()
        self.cancelled = False

    def cancel(self) -> None:
        # Under the lock: once cancel() returns, the action has either run or never will.
        # The action is let go: a cancelled alarm waits in the watchdog's heap until its
        # deadline or a sweep, and would keep its attempt (and what that holds) alive so long.
        with self._lock:
            self.cancelled = True
            self._action = _spent

    def fire(self) -> None:
        with self._lock:
            if not self.cancelled:
                self.cancelled = True
                self._action()


def _spent() -> None:
    """What a cancelled alarm holds in place of its action."""


_SWEEP_FLOOR = 32


class _Watchdog:
    """One daemon thread for the whole process, running actions at real-time deadlines.

    One thread shared by all attempts makes arming an alarm a heap push; a thread started
    per attempt would cost more than building and parsing the request itself.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        # A cancelled alarm stays in the heap until its deadline; a busy process (a batch)
        # cancels almost every alarm it arms, so the heap is swept whenever it has doubled
        # since the last sweep, which keeps it within twice the live alarms, amortised O(1).
        self._swept = _SWEEP_FLOOR

    def arm(self, delay: float, action: Callable[[], None]) -> Alarm:
        alarm = Alarm(action)
        with self._cond:
            if len(self._heap) >= 2 * self._swept:
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._swept = max(_SWEEP_FLOOR, len(self._heap))
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), alarm))
            if self._thread is None:
                self._thread = start_daemon(self._run, "support-ask-deadline")
            elif self._heap[0][2] is alarm:
                self._cond.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        alarm = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(wait)
            alarm.fire()


_watchdog = _Watchdog()


def arm(delay: float, action: Callable[[], None]) -> Alarm:
    """Run `action` on the watchdog thread `delay` real seconds from now, unless the
    returned alarm is cancelled first."""
    return _watchdog.arm(delay, action)


class Deadline:
    """One attempt's deadlines, on the injected `Clock` and in real time.

    - the whole attempt: `timeout` seconds from the start;
    - the first token (`first_token` seconds, or None): for a stream its first text, for a
      whole reply its response headers; met by `arrived`;
    - a stall (`stall` seconds, or None): the longest silence between two chunks once the
      reply flows (from `arrived` on).

    The client asks `passed` as each chunk comes (on the injected clock, so virtual time
    trips them too) and reports each chunk with `tick`. `watch` hands the real-time side to
    the watchdog: ONE alarm at the earliest moment a deadline could fall due, re-armed when
    it fires early (the first token came, chunks kept flowing), so an attempt that ends
    within `stall` seconds costs one heap push, however many deadlines it has. `expired`
    names the deadline the watchdog fired.
    """

    __slots__ = (
        "_alarm",
        "_closed",
        "_cut",
        "_first_real",
        "_last_real",
        "_lock",
        "_start_real",
        "at",
        "expired",
        "first_at",
        "first_is_headers",
        "first_token",
        "last",
        "stall",
        "stream",
        "timeout",
    )

    def __init__(
        self,
        now: float,
        timeout: float,
        *,
        first_token: float | None = None,
        stall: float | None = None,
        first_is_headers: bool = False,
    ) -> None:
        self.timeout = timeout
        self.at = now + timeout
        # A first-token deadline at or past the attempt's own end would never fire first.
        if first_token is not None and first_token >= timeout:
            first_token = None
        self.first_token = first_token
        self.first_at = None if self.first_token is None else now + self.first_token
        self.first_is_headers = first_is_headers
        self.stall = stall
        self.last: float | None = None  # when the last chunk came, once the reply flows
        self.expired: Timer | None = None
        self.stream: object = None  # the httpcore network stream, once connected
        self._start_real = time.monotonic()
        self._first_real: float | None = (
            None if self.first_token is None else self._start_real + self.first_token
        )
        self._last_real: float | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._alarm: Alarm | None = None
        self._cut: Callable[[], None] | None = None

    # -- the injected clock -------------------------------------------------------------------

    def passed(self, now: float) -> Timer | None:
        """The deadline that had run out by `now` (the earliest, if several), or None."""
        when, timer = self._due(self.at, self.first_at, self.last)
        return None if when > now else timer

    def give_up_at(self) -> float:
        """When, on the injected clock, the client gives up if nothing more arrives."""
        return self._due(self.at, self.first_at, self.last)[0]

    def arrived(self, now: float) -> None:
        """The first token (or, for a whole reply, the headers) came: the reply flows."""
        self.first_at = None
        self._first_real = None
        self.last = now
        self._last_real = time.monotonic()

    def tick(self, now: float) -> None:
        """A chunk came: the silence a stall is measured by starts again."""
        if self.last is not None:
            self.last = now
            self._last_real = time.monotonic()

    def _due(self, at: float, first_at: float | None, last: float | None) -> tuple[float, Timer]:
        """The earliest deadline still running, on whichever clock the times are from."""
        due = (at, Timer.ATTEMPT)
        if first_at is not None and first_at < due[0]:
            due = (first_at, Timer.FIRST_TOKEN)
        if last is not None and self.stall is not None and last + self.stall < due[0]:
            due = (last + self.stall, Timer.STALL)
        return due

    # -- real time: the watchdog ----------------------------------------------------------------

    def watch(self, cut: Callable[[], None]) -> None:
        """Have the watchdog call `cut` (which wakes a blocked read) when a deadline passes."""
        self._cut = cut
        self._rearm(time.monotonic())

    def close(self) -> None:
        """The attempt is over: once this returns, `cut` is never called for it."""
        with self._lock:
            self._closed = True
            alarm = self._alarm
            # `cut` (the client's, holding this deadline) and the alarm (whose action is
            # this deadline's) made the attempt a reference cycle that only the collector
            # freed: let go, it is freed as the call returns.
            self._cut = None
            self._alarm = None
        if alarm is not None:
            alarm.cancel()

    def _rearm(self, now: float) -> None:
        when, _ = self._due(self._start_real + self.timeout, self._first_real, self._last_real)
        if self.stall is not None and self._last_real is None:
            # Not flowing yet: once it does, a stall could fall due `stall` after its last
            # chunk, so look again by then. Arming here, not in `arrived`, keeps the heap
            # out of a healthy attempt's path.
            when = min(when, now + self.stall)
        self._alarm = arm(max(0.0, when - now), self._fire)

    def _fire(self) -> None:
        with self._lock:
            if self._closed:
                return
            now = time.monotonic()
            when, timer = self._due(
                self._start_real + self.timeout, self._first_real, self._last_real
            )
            if when > now:  # the first token came, or chunks kept coming: not yet
                self._rearm(now)
                return
            self.expired = timer
            assert self._cut is not None
            self._cut()


def shutdown_stream(stream: object) -> None:
    """Shut down the socket under an httpcore network stream, waking a read blocked on it."""
    get_extra_info = getattr(stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing is blocked on it
            sock.shutdown(socket.SHUT_RDWR)
