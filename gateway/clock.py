"""Real and virtual time. Virtual time makes `simulate` instant and tests deterministic.

And the real process's other threads: each starts with the stop signals blocked
(`start_daemon` for the tool's, `stops_blocked` around a library's), so that a Ctrl-C,
TERM or HUP can only interrupt the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

# Here, with the real clock, because every module that starts a thread (the deadline
# watchdog, a DNS lookup in gateway.providers.resolve, `batch`'s reader and workers, the
# index's reading pool in gateway.knowledge.reading, the token counter's pool in
# gateway.tokens) may import this layer, and a provider's call loads it before the
# watchdog starts: a module of its own would be one more import on that path (+335 k
# instructions a process). Why they block the stop signals: the kernel hands a
# process-directed signal (a terminal's Ctrl-C, a supervisor's SIGTERM, a closed
# terminal's SIGHUP) to any one thread that does not block it, and when the process was
# stopped and continued that may be a helper thread. Python runs the handler on the main
# thread only once that thread runs bytecode again, and a main thread blocked in a
# provider's `recv` does so when the read times out: the stop waited for the provider's
# timeout. Blocked in every other thread, the signal can only interrupt the main thread.
STOPS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@contextlib.contextmanager
def stops_blocked(stops: frozenset[int] = STOPS) -> Iterator[None]:
    """Block the stop signals (`stops`) in this thread for the block's length: every thread
    started in it inherits the mask from its first instruction (set in the thread itself, a
    signal could reach it before that line ran). A signal that comes meanwhile waits, and is
    this thread's once its mask is restored. A process started in it inherits the mask too:
    start none here that should take those signals."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_daemon(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a daemon thread running `target` that never takes a stop signal."""
    with stops_blocked():
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
    return thread


class SystemClock:
    """The real clock, sleeper and random source."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def random(self) -> float:
        import random  # drawn only for a backoff's jitter, which an answer never needs

        return random.random()


class VirtualClock:
    """A clock that only moves when something sleeps on it (or `advance` is called).

    It is its own sleeper: sleeping advances time at once, so code that backs off for
    eight seconds runs in microseconds and the record still says eight seconds.
    """

    def __init__(self, start_wall: float = 1_700_000_000.0) -> None:
        self._mono = 0.0
        self._wall0 = start_wall
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self._mono

    def wall(self) -> float:
        return self._wall0 + self._mono

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self._mono += seconds

    def advance_to(self, when: float) -> None:
        """Move to exactly `when` (never back): a deadline reached is reached to the bit."""
        self._mono = max(self._mono, when)


class FixedRandom:
    """A random source that always answers the same value: jitter made predictable."""

    def __init__(self, value: float = 0.5) -> None:
        self.value = value

    def random(self) -> float:
        return self.value
