"""What a draw on the shared allowances asks for and gets back, and what each allowance
keeps between draws. NamedTuples, as the state's records are: every question imports them."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import NamedTuple

from gateway.config.model import Limits

_NOTHING_HELD: Mapping[str, float] = MappingProxyType({})


class Bound(StrEnum):
    """Which of an allowance's limits set a draw's wait; its value is how the attempts
    table names it, after the allowance (`the limit key:KEY_A rpm`)."""

    RPM = "rpm"
    TPM = "tpm"
    CONCURRENT = "concurrent"
    # The slow start's: the provider has stated nothing yet and one call across the fleet
    # goes first (`rules.cold`); a draw refused for it only for now looks again.
    FIRST_CALL = "first call"


class Claim(NamedTuple):
    """One allowance a call draws from: `name` is `deployment:NAME`, `key:VARIABLE` or
    `provider:VARIABLE/MODEL`, `tokens` what the call may use (its estimated input plus
    `max_output_tokens`). An allowance's limits are its configured ones, tightened by
    what the provider's headers said (`Bucket`'s rates): a `provider:` allowance has
    only those. `stated`: the allowance the provider's headers speak for, which starts
    slow while they have said nothing (`rules.cold`): its first call goes alone."""

    name: str
    limits: Limits
    tokens: int
    stated: bool = False


class Grant(NamedTuple):
    """What a draw got. Granted: the call may start after `wait` seconds (its place is
    taken: nobody else gets it). Refused: nothing was taken, and `wait` is how long it
    would have had to wait (past the most it could). `allowance` and `bound` name the
    allowance and the limit of it that set the wait (none: nothing waited); `ticket`
    names the calls-at-once slots it holds until settled."""

    granted: bool
    wait: float = 0.0
    allowance: str = ""
    bound: Bound | None = None
    ticket: str = ""
    claims: tuple[Claim, ...] = ()

    @property
    def blocking(self) -> str:
        """The limit that set the wait, as the attempts table names it."""
        return "" if self.bound is None else f"{self.allowance} {self.bound}"

    @property
    def first_call_out(self) -> bool:
        """Refused only for now: a cold allowance's first call is out (`Bound.FIRST_CALL`);
        look again after the wait."""
        return not self.granted and self.bound is Bound.FIRST_CALL


GRANTED = Grant(True)


class Bucket(NamedTuple):
    """One allowance's state: when each rate's bucket is next empty (the GCRA's
    theoretical arrival times, epoch seconds), the calls in flight, each slot's ticket
    with the time it is released by itself (a process that died holds none for long), and
    the provider's own limits a minute as its headers last stated them (0: none stated),
    which hold wherever they are tighter than the configured ones; `quiet_until`: a
    provider answered the slow start's first call without stating any, so nothing holds
    the allowance back until then (`rules.QUIET_S`)."""

    requests_at: float = 0.0
    tokens_at: float = 0.0
    held: Mapping[str, float] = _NOTHING_HELD
    requests_rate: float = 0.0
    tokens_rate: float = 0.0
    quiet_until: float = 0.0


class Tightening(NamedTuple):
    """What a provider's headers do to the allowance `name` they speak for (the key's
    `provider:` one): each rate's bucket is booked at least this many seconds ahead of
    now (0 or less: not moved), and its limit a minute is the one the headers were read
    against (the provider's stated one, or else the configured one; 0: neither)."""

    name: str
    requests_ahead: float = 0.0
    requests_rate: float = 0.0
    tokens_ahead: float = 0.0
    tokens_rate: float = 0.0


EMPTY_BUCKET = Bucket()


class Tally(NamedTuple):
    """A deployment's recent first calls and retries across the fleet, decayed with time
    (`rules.RETRY_WINDOW_S`), as of `at`."""

    requests: float = 0.0
    retries: float = 0.0
    at: float = 0.0


class Use(NamedTuple):
    """One allowance's use now, for `support-ask cooldowns`: how far ahead each rate is
    booked (seconds of its bucket taken), the calls in flight, and the provider's own
    limits a minute as its headers last stated them (0: none)."""

    name: str
    limits: Limits
    requests_ahead: float
    tokens_ahead: float
    in_flight: int
    requests_rate: float = 0.0
    tokens_rate: float = 0.0
