"""The seams the engine is built against. The CLI wires real ones in; tests wire fakes."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from gateway.model import Cooldown, CooldownBasis, ErrorKind, Reply, Request, TextSink

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.limits.records import Claim, Grant, Tightening, Use
    from gateway.secrets.key import Secret
    from gateway.state.records import Snapshot


class Provider(Protocol):
    """One deployment's adapter: speaks its provider's wire protocol.

    `timeout` bounds the whole call (connect to last byte), already capped by what is left
    of the question's budget. With `on_text`, the call streams and hands each text delta to
    it as it arrives; without, it does not stream. `first_token` (None: no such limit)
    bounds the wait for the first text of a stream, or for a whole reply's response;
    `stall` the silence between two chunks once the reply flows. Every failure is raised
    as `gateway.model.ProviderError` (a deadline's names its `Timer`); nothing else escapes.
    """

    def complete(
        self,
        request: Request,
        *,
        timeout: float,
        on_text: TextSink | None = None,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply: ...


class Compactor(Protocol):
    """Builds a smaller request for the same question: less of the help centre.

    The engine asks for one when a deployment's window cannot hold the request, or the
    deployment reported that its window overflowed; it counts the tokens of what it gets
    (the builder's own count is an estimate) and asks again for less if need be.
    """

    def within(self, tokens: int) -> Request | None:
        """The question with as much of the help centre as fits an input (system prompt
        and question) of about `tokens` tokens; None when the prompt and the question
        alone do not fit."""
        ...


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
    """What the fleet shares across invocations: cooldowns, probe leases, cursors.

    Records are named by deployment, or `key:DEPLOYMENT/VARIABLE` for one of its keys.
    `credentials` maps a name to its current key (or None): a record bound to a key's
    fingerprint is void once the key differs. All times are epoch seconds. No store raises
    for its own trouble (a bad file, a Redis that is down): it reports it and carries on.
    """

    def read(
        self,
        now: float,
        credentials: Mapping[str, Secret | None],
        *,
        advance: Collection[str] = (),
    ) -> Snapshot:
        """One question's view: what is cooling, what awaits its probe, who is probing;
        and the round-robin cursors of `advance`, each moved on by one for the next reader."""
        ...

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        """The cooldowns still in force at `now`, by name."""
        ...

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
        """Record a cooldown. Only ever extends: a shorter `until` leaves a longer one alone;
        one taken after the last ended (a failed probe) lasts at least twice as long; none
        lasts beyond `cap` from now."""
        ...

    def clear(self, name: str | None = None) -> None:
        """Forget one record and its probe lease (a success), or every record (None)."""
        ...

    def lease(self, name: str, *, now: float, ttl: float) -> bool:
        """Take the one probe after `name`'s cooldown, for `ttl` seconds; False when
        another invocation holds it."""
        ...

    def entries(self) -> list[Cooldown]:
        """Every record, ended or not, for `support-ask cooldowns`."""
        ...


class Allowance(Protocol):
    """The fleet's shared allowances: rate and token limits, calls at once, and the retry
    budget, drawn from by every process that uses them (`gateway.limits`).

    Waits are seconds from the draw; `now` is the caller's wall clock, which an allowance
    on a server ignores for its own. No allowance raises for its own trouble: it reports
    it and keeps to this process's share of each limit.
    """

    def draw(
        self,
        claims: Sequence[Claim],
        *,
        now: float,
        most_wait: float,
        hold: float,
        count: str | None = None,
    ) -> Grant:
        """A place for one call in every allowance of `claims`, at most `most_wait` seconds
        ahead (refused, taking nothing, when it would be later). Calls-at-once slots are
        held until settled, or `hold` seconds after the place. `count`: the retry budget
        this call counts a first call toward."""
        ...

    def settle(
        self,
        grant: Grant,
        *,
        used: int | None,
        now: float,
        tightening: Tightening | None = None,
        answered: bool = False,
    ) -> None:
        """The call ended: `used` (the provider's reported tokens, None: not reported)
        replaces what was reserved, and its slots are released; `tightening` (what the
        provider's rate-limit headers said) books its allowance ahead, in the same step.
        `answered`: the provider answered (a slow start's first call answered without figures
        leaves the allowance unheld for a while: `gateway.limits.rules`)."""
        ...

    def retry(self, name: str, *, share: float, now: float) -> bool:
        """Take one retry from `name`'s budget; False when the fleet's retries would pass
        `share` of its recent first calls."""
        ...

    def usage(self, claims: Sequence[Claim], now: float) -> list[Use]:
        """Each allowance's use now, for `support-ask cooldowns`."""
        ...
