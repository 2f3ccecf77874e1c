"""Real and virtual time. Virtual time makes `simulate` instant and tests deterministic."""

from __future__ import annotations

import time


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
