"""A process's first calls counted in memory (`gateway.limits.local`) reach the retry
budget's tally before any retry is judged, however the threads of a batch interleave."""

from __future__ import annotations

from gateway.limits.local import Change, Ledger
from gateway.limits.memory import MemoryAllowance

BUDGET = "retry:primary"
T = 1_000.0


class Interleaved(MemoryAllowance):
    """A memory allowance in which, the first time a change is applied, the other workers'
    retries are applied first: as when a thread that asked for a retry is preempted just
    before the ledger's lock and the other threads' retries get it before it."""

    def __init__(self, others: int) -> None:
        super().__init__()
        self.others = others
        self.their_answers: list[bool] = []

    def _update(self, change: Change) -> Ledger:
        while self.others:
            self.others -= 1
            self.their_answers.append(self.retry(BUDGET, share=8.0, now=T))
        return super()._update(change)


def test_eight_workers_retrying_the_same_storm_each_find_the_budget_has_room() -> None:
    allowance = Interleaved(others=7)
    for _ in range(8):  # eight workers' first calls, all met by a 429; nothing is limited
        allowance.draw([], now=T, most_wait=30.0, hold=30.0, count=BUDGET)

    # Eight first calls at eight retries each: room for 64. The first worker's retry is
    # preempted; the seven others' are judged before it.
    mine = allowance.retry(BUDGET, share=8.0, now=T)

    assert allowance.their_answers == [True] * 7 and mine
