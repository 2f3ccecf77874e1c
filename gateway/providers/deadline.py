"""The whole-attempt deadline, enforced on the socket.

httpx's timeouts bound each socket operation, not the call, so a server trickling one
byte a second would never trip them. The client checks the deadline between chunks on
the injected `Clock`; the watchdog here shuts the socket down when a read is still
blocked in the kernel at the deadline (closing a socket from another thread does not
wake a blocked read; shutting it down does).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable


class Alarm:
    """One armed action: cancelled before it fires, it never runs."""

    __slots__ = ("_action", "_lock", "cancelled")

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action
        self._lock = threading.Lock()
        self.cancelled = False

    def cancel(self) -> None:
        # Under the lock: once cancel() returns, the action has either run or never will.
        with self._lock:
            self.cancelled = True

    def fire(self) -> None:
        with self._lock:
            if not self.cancelled:
                self.cancelled = True
                self._action()


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

    def arm(self, delay: float, action: Callable[[], None]) -> Alarm:
        alarm = Alarm(action)
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), alarm))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="support-ask-deadline", daemon=True
                )
                self._thread.start()
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
    """One attempt's end, on the injected clock; `expired` is set when the watchdog fired."""

    __slots__ = ("at", "expired", "stream", "timeout")

    def __init__(self, at: float, timeout: float) -> None:
        self.at = at
        self.timeout = timeout
        self.expired = False
        self.stream: object = None  # the httpcore network stream, once connected


def shutdown_stream(stream: object) -> None:
    """Shut down the socket under an httpcore network stream, waking a read blocked on it."""
    get_extra_info = getattr(stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing is blocked on it
            sock.shutdown(socket.SHUT_RDWR)
