"""What a batch has done so far: counts kept under a lock, read as frozen snapshots."""

from __future__ import annotations

import threading

from gateway.batch.limiter import LimiterState
from gateway.model import Action, Result, Status
from gateway.record import record


@record
class Progress:
    total: int | None  # lines in the input, when it could be counted (a file, not a pipe)
    skipped: int  # already answered in the output (--resume)
    asked: int  # questions finished this run
    answered: int  # posted: their action is `answer`
    refused: int
    failed: int  # failed or fatal, and questions the batch itself could not ask
    invalid: int  # input lines that could not be asked
    fallback: int  # answered or refused by a deployment other than the route's first
    elapsed_s: float
    limiter: LimiterState
    stopping: bool = False
    handoff: int = 0  # handed to a person (exit 5 for `ask`), by a deployment or unasked
    served: int = 0  # answered, handed off or refused by a deployment (the share's base)

    @property
    def done(self) -> int:
        """Input lines dealt with: asked, bad, or skipped as already answered."""
        return self.asked + self.invalid + self.skipped

    @property
    def rate(self) -> float:
        """Questions asked per second this run."""
        return self.asked / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        if self.total is None or self.rate <= 0:
            return None
        return max(0, self.total - self.done) / self.rate

    @property
    def fallback_share(self) -> float | None:
        return self.fallback / self.served if self.served else None


class Tally:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.skipped = self.asked = self.answered = self.refused = self.handoff = 0
        self.failed = self.invalid = self.fallback = self.served = 0

    def result(self, result: Result, *, by_fallback: bool) -> None:
        with self._lock:
            self.asked += 1
            if result.action is Action.HANDOFF:
                self.handoff += 1
            elif result.status is Status.ANSWERED:
                self.answered += 1
            elif result.status is Status.REFUSED:
                self.refused += 1
            else:
                self.failed += 1
            if result.deployment is not None and result.status in (Status.ANSWERED, Status.REFUSED):
                self.served += 1
                self.fallback += by_fallback

    def crashed(self) -> None:
        with self._lock:
            self.asked += 1
            self.failed += 1

    def bad_line(self) -> None:
        with self._lock:
            self.invalid += 1

    def skip(self) -> None:
        with self._lock:
            self.skipped += 1

    def snapshot(
        self, *, total: int | None, elapsed: float, limiter: LimiterState, stopping: bool
    ) -> Progress:
        with self._lock:
            return Progress(
                total=total,
                skipped=self.skipped,
                asked=self.asked,
                answered=self.answered,
                refused=self.refused,
                failed=self.failed,
                invalid=self.invalid,
                fallback=self.fallback,
                handoff=self.handoff,
                served=self.served,
                elapsed_s=elapsed,
                limiter=limiter,
                stopping=stopping,
            )
