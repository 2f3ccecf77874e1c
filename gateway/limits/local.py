"""The Allowance protocol written once over the rules, for allowances whose whole ledger
is held in one place (memory, a file): such an allowance says only where its ledger lives
(`_load`) and how a change reaches it (`_update`)."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from gateway.limits import rules
from gateway.limits.records import EMPTY_BUCKET, Bucket, Claim, Grant, Tally, Tightening, Use

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
        if max(b.requests_at, b.tokens_at) + _FORGET_S > now or rules.live(b.held, now)
    }
    tallies = {name: t for name, t in ledger.tallies.items() if t.at + _FORGET_S > now}
    return Ledger(buckets, tallies)


class LocalAllowance(ABC):
    def __init__(self, *, alone: bool = False) -> None:
        # Alone: this process keeps to its own share of each limit (`Limits.fleet_size`).
        self._alone = alone

    def draw(
        self,
        claims: Sequence[Claim],
        *,
        now: float,
        most_wait: float,
        hold: float,
        count: str | None = None,
    ) -> Grant:
        ticket = os.urandom(8).hex()
        got: list[Grant] = []

        def change(ledger: Ledger) -> Ledger | None:
            got.clear()
            # Read when the change is applied: an allowance may have been left alone since.
            wanted = rules.alone(claims) if self._alone else tuple(claims)
            grant, changed = rules.draw(
                ledger.buckets, wanted, now=now, most_wait=most_wait, ticket=ticket, hold=hold
            )
            got.append(grant)
            tallies = ledger.tallies
            if count is not None and grant.granted:
                tallies = {**tallies, count: rules.counted(tallies.get(count, Tally()), now)}
            if not changed and tallies is ledger.tallies:
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
    ) -> None:
        if not (grant.granted and grant.claims) and tightening is None:
            return

        def change(ledger: Ledger) -> Ledger | None:
            changed = rules.settle(ledger.buckets, grant, used=used, now=now)
            if tightening is not None:
                changed |= rules.tighten({**ledger.buckets, **changed}, tightening, now)
            return Ledger({**ledger.buckets, **changed}, ledger.tallies) if changed else None

        self._update(change)

    def retry(self, name: str, *, share: float, now: float) -> bool:
        allowed: list[bool] = []

        def change(ledger: Ledger) -> Ledger | None:
            allowed.clear()
            tally = rules.retried(ledger.tallies.get(name, Tally()), share, now)
            allowed.append(tally is not None)
            if tally is None:
                return None
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
