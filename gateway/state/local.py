"""The StateStore protocol written once over the rules, for the stores that hold the whole
state in one place (memory, a file): such a store says only where its state lives
(`_load`) and how a change reaches it (`_update`)."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping

from gateway.model import Cooldown, CooldownBasis, ErrorKind
from gateway.secrets.key import Secret
from gateway.state import rules
from gateway.state.records import DEFAULT_BOUNDS, Lease, Snapshot, State, StateBounds

Change = Callable[[State], State | None]


class LocalStore(ABC):
    def __init__(
        self, *, limits: StateBounds = DEFAULT_BOUNDS, known: Collection[str] | None = None
    ):
        self.limits = limits
        # Names still configured: records of any other are pruned on the next write.
        self._known = None if known is None else frozenset(known)
        self._holder = os.urandom(8).hex()

    def read(
        self,
        now: float,
        credentials: Mapping[str, Secret | None],
        *,
        advance: Collection[str] = (),
    ) -> Snapshot:
        state = self._load() if not advance else self._update(lambda s: rules.advance(s, advance))
        seen = rules.snapshot(state, now, credentials, self.limits, cursors=advance)
        if advance:  # the cursors as they were before this question moved them on
            before = {k: v - 1 for k, v in seen.cursors.items()}
            seen = Snapshot(seen.cooling, seen.due, seen.probing, before, seen.present)
        return seen

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        return dict(self.read(now, credentials).cooling)

    def entries(self) -> list[Cooldown]:
        return sorted(self._load().entries.values(), key=lambda c: c.name)

    def cool(
        self,
        name: str,
        *,
        until: float,
        kind: ErrorKind,
        now: float,
        status: int | None = None,
        code: str | None = None,
        basis: CooldownBasis = CooldownBasis.POLICY,
        deployment: str | None = None,
        credential: Secret | None = None,
        cap: float | None = None,
    ) -> None:
        new = Cooldown(name, deployment or name, until, kind, now, status, code, 1, basis)
        limit = self.limits.max_cooldown if cap is None else min(cap, self.limits.max_cooldown)

        def change(state: State) -> State | None:
            return rules.cool(
                state,
                new,
                now=now,
                cap=limit,
                credential=credential,
                limits=self.limits,
                known=self._known,
            )

        self._update(change)

    def clear(self, name: str | None = None) -> None:
        self._update(lambda state: rules.clear(state, name))

    def lease(self, name: str, *, now: float, ttl: float) -> bool:
        lease = Lease(now + ttl, self._holder)
        taken = self._update(lambda state: rules.take_lease(state, name, lease, now))
        return taken.leases.get(name) == lease

    @abstractmethod
    def _load(self) -> State:
        """The state for a read."""

    @abstractmethod
    def _update(self, change: Change) -> State:
        """Apply `change` (None: nothing changes) and return the state now in force."""
