"""The Allowance protocol written once over the rules, for allowances whose whole ledger
is held in one place (memory, a file): such an allowance says only where its ledger lives
(`_load`) and how a change reaches it (`_update`).

A call that nothing limits yet (no `limits` set for its deployment or key, and no limit
its provider stated in the ledger, which is read without the lock to see that) books
nothing: its first call is counted toward the retry budget here, in memory, and reaches
the ledger with this process's next change to it (a retry asked for, a draw or a settle
that books something), so a healthy question never locks or rewrites the ledger. What a
process counted but never wrote (all its first calls answered, none retried) stays out of
the fleet's tally, which makes the budget a little stricter in a partial outage, never
looser."""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from gateway.limits import rules
from gateway.limits.records import (
    EMPTY_BUCKET,
    GRANTED,
    Bucket,
    Claim,
    Grant,
    Tally,
    Tightening,
    Use,
)

_NONE: Mapping[str, Bucket] = MappingProxyType({})
_NO_TALLIES: Mapping[str, Tally] = MappingProxyType({})
# A bucket empty for this long, a tally this quiet, is dropped: the ledger stays small.
_FORGET_S = 10 * rules.RETRY_WINDOW_S


class Ledger(NamedTuple):
    buckets: Mapping[str, Bucket] = _NONE
    tallies: Mapping[str, Tally] = _NO_TALLIES


Change = Callable[[Ledger], Ledger | None]


def pruned(ledger: Ledger, now: float) -> Ledger:
    buckets = {
        name: b
        for name, b in ledger.buckets.items()
        if max(b.requests_at, b.tokens_at, b.quiet_until) + _FORGET_S > now
        or rules.live(b.held, now)
    }
    tallies = {name: t for name, t in ledger.tallies.items() if t.at + _FORGET_S > now}
    return Ledger(buckets, tallies)


class LocalAllowance(ABC):
    def __init__(self, *, alone: bool = False) -> None:
        # Alone: this process keeps to its own share of each limit (`Limits.fleet_size`).
        self._alone = alone
        self._counted: dict[str, Tally] = {}  # first calls not yet in the ledger
        self._counting = threading.Lock()  # `batch` draws from several threads at once

    def _count(self, name: str, now: float) -> None:
        with self._counting:
            self._counted[name] = rules.counted(self._counted.get(name, Tally()), now)

    def _take_counted(self) -> dict[str, Tally]:
        with self._counting:
            counted, self._counted = self._counted, {}
        return counted

    def _taking(self) -> Callable[[], Mapping[str, Tally]]:
        """The first calls counted in memory, taken when a change is first applied, under the
        ledger's lock: taken before it, another thread's change applied in between would
        judge its retry against a tally that lacks them (a batch's workers, all retrying
        the same storm's 429s, would find the budget spent after the few always allowed)."""
        taken: list[Mapping[str, Tally]] = []

        def take() -> Mapping[str, Tally]:
            if not taken:
                taken.append(self._take_counted())
            return taken[0]

        return take

    def _with_counted(self, ledger: Ledger, counted: Mapping[str, Tally], now: float) -> Ledger:
        """`ledger` with the first calls this process counted in memory added to it."""
        if not counted:
            return ledger
        tallies = dict(ledger.tallies)
        for name, tally in counted.items():
            tallies[name] = rules.merged(tallies.get(name, Tally()), tally, now)
        return Ledger(ledger.buckets, tallies)

    def _limits_nothing(self, claims: Sequence[Claim], now: float) -> bool:
        """Whether no claim is limited by anything yet (no limits set, no provider's stated
        ones in the ledger): then the call books nothing. Read without the lock: the ledger
        is replaced whole, and a limit stated a moment later holds from the next call."""
        if not claims:
            return True
        if any(rules.held_to(c, EMPTY_BUCKET) != (None, None, None) for c in claims):
            return False  # a configured limit: booked under the lock
        buckets = self._load().buckets
        return not any(rules.limited(c, buckets.get(c.name, EMPTY_BUCKET), now) for c in claims)

    def draw(
        self,
        claims: Sequence[Claim],
        *,
        now: float,
        most_wait: float,
        hold: float,
        count: str | None = None,
    ) -> Grant:
        if self._limits_nothing(claims, now):
            if count is not None:
                self._count(count, now)
            return GRANTED
        ticket = os.urandom(8).hex()
        got: list[Grant] = []
        counted = self._taking()

        def change(stored: Ledger) -> Ledger | None:
            got.clear()
            ledger = self._with_counted(stored, counted(), now)
            # Read when the change is applied: an allowance may have been left alone since.
            grant, changed = rules.draw(
                ledger.buckets,
                claims,
                now=now,
                most_wait=most_wait,
                ticket=ticket,
                hold=hold,
                alone=self._alone,
            )
            got.append(grant)
            tallies = ledger.tallies
            if count is not None and grant.granted:
                tallies = {**tallies, count: rules.counted(tallies.get(count, Tally()), now)}
            if not changed and tallies is stored.tallies:
                return None
            return pruned(Ledger({**ledger.buckets, **changed}, tallies), now)

        self._update(change)
        return got[0]

    def settle(
        self,
        grant: Grant,
        *,
        used: int | None,
        now: float,
        tightening: Tightening | None = None,
        answered: bool = False,
    ) -> None:
        if not (grant.granted and grant.claims) and tightening is None:
            return
        counted = self._taking()

        def change(stored: Ledger) -> Ledger | None:
            ledger = self._with_counted(stored, counted(), now)
            changed = rules.settle(
                ledger.buckets, grant, used=used, now=now, answered=answered, alone=self._alone
            )
            if tightening is not None:
                changed |= rules.tighten({**ledger.buckets, **changed}, tightening, now)
            if not changed:
                return None if ledger is stored else ledger
            return Ledger({**ledger.buckets, **changed}, ledger.tallies)

        self._update(change)

    def retry(self, name: str, *, share: float, now: float) -> bool:
        allowed: list[bool] = []
        counted = self._taking()

        def change(stored: Ledger) -> Ledger | None:
            allowed.clear()
            ledger = self._with_counted(stored, counted(), now)
            tally = rules.retried(ledger.tallies.get(name, Tally()), share, now)
            allowed.append(tally is not None)
            if tally is None:
                return None if ledger is stored else ledger
            return Ledger(ledger.buckets, {**ledger.tallies, name: tally})

        self._update(change)
        return allowed[0]

    def usage(self, claims: Sequence[Claim], now: float) -> list[Use]:
        ledger = self._load()
        out: list[Use] = []
        for claim in claims:
            b = ledger.buckets.get(claim.name, EMPTY_BUCKET)
            out.append(
                Use(
                    claim.name,
                    claim.limits,
                    rules.ahead(b.requests_at, now),
                    rules.ahead(b.tokens_at, now),
                    len(rules.live(b.held, now)),
                    b.requests_rate,
                    b.tokens_rate,
                )
            )
        return out

    @abstractmethod
    def _load(self) -> Ledger:
        """The ledger for a read."""

    @abstractmethod
    def _update(self, change: Change) -> Ledger:
        """Apply `change` (None: nothing changes) and return the ledger now in force."""
