"""The seams the engine is built against. The CLI wires real ones in; tests wire fakes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from gateway.model import Cooldown, ErrorKind, Reply, Request, TextSink

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.secret import Secret


class Provider(Protocol):
    """One deployment's adapter: speaks its provider's wire protocol.

    `timeout` bounds the whole call (connect to last byte), already capped by what is left
    of the question's budget. With `on_text`, the call streams and hands each text delta to
    it as it arrives; without, it does not stream. Every failure is raised as
    `gateway.model.ProviderError`; nothing else escapes.
    """

    def complete(
        self, request: Request, *, timeout: float, on_text: TextSink | None = None
    ) -> Reply: ...


class ProviderFactory(Protocol):
    """Builds the adapter for a deployment; called only when the engine is about to call it."""

    def __call__(self, deployment: Deployment, key: Secret | None) -> Provider: ...


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: budgets and elapsed times."""
        ...

    def wall(self) -> float:
        """Epoch seconds: cooldown expiry (shared across processes) and HTTP-dates."""
        ...


class Sleeper(Protocol):
    def sleep(self, seconds: float) -> None: ...


class RandomSource(Protocol):
    def random(self) -> float:
        """A float in [0, 1): the jitter."""
        ...


class StateStore(Protocol):
    """Cooldowns shared across invocations.

    `credentials` maps a deployment to its current key (or None): a cooldown recorded with
    a credential fingerprint is ignored once the key differs. All times are epoch seconds.
    """

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        """The cooldowns still in force at `now`, by deployment name."""
        ...

    def cool(
        self,
        deployment: str,
        *,
        until: float,
        kind: ErrorKind,
        now: float,
        detail: str = "",
        credential: Secret | None = None,
    ) -> None:
        """Record a cooldown. Only ever extends: a shorter `until` leaves a longer one alone."""
        ...

    def clear(self, deployment: str | None = None) -> None:
        """Forget one deployment's cooldown (a success), or all of them (None)."""
        ...

    def entries(self) -> list[Cooldown]:
        """Every recorded cooldown, expired or not, for `support-ask cooldowns`."""
        ...
