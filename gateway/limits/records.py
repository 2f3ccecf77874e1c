"""What a draw on the shared allowances asks for and gets back, and what each allowance
keeps between draws. NamedTuples, as the state's records are: every question imports them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from gateway.config.model import Limits

_NOTHING_HELD: Mapping[str, float] = MappingProxyType({})


class Claim(NamedTuple):
    """One allowance a call draws from: `name` is `deployment:NAME` or `key:VARIABLE`,
    `tokens` what the call may use (its estimated input plus `max_output_tokens`)."""

    name: str
    limits: Limits
    tokens: int


class Grant(NamedTuple):
    """What a draw got. Granted: the call may start after `wait` seconds (its place is
    taken: nobody else gets it). Refused: nothing was taken, and `wait` is how long it
    would have had to wait (past the most it could). `blocking` names the allowance and
    the limit that set the wait; `ticket` names the calls-at-once slots it holds until
    settled."""

    granted: bool
    wait: float = 0.0
    blocking: str = ""
    ticket: str = ""
    claims: tuple[Claim, ...] = ()


GRANTED = Grant(True)


class Bucket(NamedTuple):
    """One allowance's state: when each rate's bucket is next empty (the GCRA's
    theoretical arrival times, epoch seconds) and the calls in flight, each slot's ticket
    with the time it is released by itself (a process that died holds none for long)."""

    requests_at: float = 0.0
    tokens_at: float = 0.0
    held: Mapping[str, float] = _NOTHING_HELD


EMPTY_BUCKET = Bucket()


class Tally(NamedTuple):
    """A deployment's recent first calls and retries across the fleet, decayed with time
    (`rules.RETRY_WINDOW_S`), as of `at`."""

    requests: float = 0.0
    retries: float = 0.0
    at: float = 0.0


class Use(NamedTuple):
    """One allowance's use now, for `support-ask cooldowns`: how far ahead each rate is
    booked (seconds of its bucket taken), and the calls in flight."""

    name: str
    limits: Limits
    requests_ahead: float
    tokens_ahead: float
    in_flight: int
