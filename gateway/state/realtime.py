"""A store that writes real wall-clock times whatever clock the engine runs on.

`simulate` runs on virtual time: its waits are shown, not taken, so its wall clock runs
ahead of the real one. Written as they are, its cooldowns would have "started" in the
future of a real --state file that real invocations share; through this wrapper each is
recorded for as long as it lasts, from the real now.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping

from gateway.model import Cooldown, CooldownBasis, ErrorKind
from gateway.seams import StateStore
from gateway.secrets.key import Secret
from gateway.state.records import Snapshot


class RealTimeStore:
    def __init__(self, inner: StateStore, *, wall: Callable[[], float] = time.time) -> None:
        self._inner = inner
        self._wall = wall

    def read(
        self,
        now: float,
        credentials: Mapping[str, Secret | None],
        *,
        advance: Collection[str] = (),
    ) -> Snapshot:
        return self._inner.read(now, credentials, advance=advance)

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        return self._inner.active(now, credentials)

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
        real = self._wall()
        self._inner.cool(
            name,
            until=real + (until - now),
            kind=kind,
            now=real,
            status=status,
            code=code,
            basis=basis,
            deployment=deployment,
            credential=credential,
            cap=cap,
        )

    def clear(self, name: str | None = None) -> None:
        self._inner.clear(name)

    def lease(self, name: str, *, now: float, ttl: float) -> bool:
        return self._inner.lease(name, now=self._wall(), ttl=ttl)

    def entries(self) -> list[Cooldown]:
        return self._inner.entries()
