"""How long to wait before a retry, and how much time a question has left.

Pure functions: the random draw and the current time are passed in, so every wait the
engine takes can be predicted exactly in a test.
"""

from __future__ import annotations

from typing import NamedTuple

from gateway.config import Policy

# Below this, an attempt has no realistic chance of an answer: a wait that would leave less
# than this much budget is not taken (the engine fails over instead).
MIN_ATTEMPT_S = 0.5
_MAX_DOUBLINGS = 64


def backoff_delay(retry: int, policy: Policy, rand: float) -> float:
    """The wait before retry number `retry` (1 for the first retry) when the server named none.

    Exponential with "equal jitter": the ceiling is ``min(backoff_max, backoff_base *
    2**(retry-1))`` and the wait is drawn uniformly from ``[ceiling/2, ceiling)``. Half the
    ceiling is kept so a retry never fires immediately into the same overload; the other
    half is random so a crowd of clients that failed together does not retry together.
    """
    # The exponent is bounded: 2.0 ** 1024 overflows a float (OverflowError), and after 64
    # doublings a base of even a microsecond is past any cap a budget could wait for.
    doublings = min(max(retry - 1, 0), _MAX_DOUBLINGS)
    ceiling = min(policy.backoff_max, policy.backoff_base * 2.0**doublings)
    return ceiling / 2.0 + ceiling / 2.0 * rand


class Budget(NamedTuple):
    """The question's end-to-end time allowance, on the monotonic clock. (A NamedTuple, not
    a record: a question makes one for itself and one per deployment it calls, and a
    tuple's constructor is C; frozen all the same.)"""

    start: float
    total: float

    @property
    def deadline(self) -> float:
        return self.start + self.total

    def left(self, now: float) -> float:
        left = self.start + self.total - now
        return left if left > 0.0 else 0.0

    def fits(self, wait: float, now: float, attempt: float = MIN_ATTEMPT_S) -> bool:
        """Whether waiting `wait` still leaves `attempt` seconds for the next call."""
        return wait <= self.longest_wait(now, attempt)

    def longest_wait(self, now: float, attempt: float = MIN_ATTEMPT_S) -> float:
        """The longest wait that still leaves `attempt` seconds for the next call (below
        zero: none does)."""
        return self.left(now) - max(MIN_ATTEMPT_S, attempt)


# The most a wait taken from a server's Retry-After is lengthened by, and as a share of it:
# machines told the same instant do not all fire at it.
RETRY_AFTER_JITTER_S = 1.0
RETRY_AFTER_JITTER_SHARE = 0.1


def retry_after_wait(retry_after: float, rand: float) -> float:
    """The wait taken from a server's Retry-After: never sooner than it asked, a little
    later by the random draw `rand` in [0, 1)."""
    spread = min(RETRY_AFTER_JITTER_S, RETRY_AFTER_JITTER_SHARE * retry_after)
    return retry_after + spread * rand
