"""The allowances' rules as pure functions: the generic cell rate algorithm (GCRA) for
requests and tokens a minute, slots for calls at once, and the retry budget.

A rate of R a minute is one cell every 60/R seconds, with a burst of one second's worth
(at least one cell): providers enforce a minute's limit over much shorter windows, so a
minute's worth at once would be refused. A call larger than the burst (a long prompt
against a small token limit) waits for an empty bucket, then goes. The Redis allowance
runs the same arithmetic in Lua on the server's clock; tests run one table of cases
against every allowance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gateway.config.model import Limits
from gateway.limits.records import EMPTY_BUCKET, Bucket, Claim, Grant, Tally

BURST_S = 1.0
# Calls at once are not booked ahead: a full allowance is looked at again this soon.
SLOT_POLL_S = 0.25
# What "recent" means for the retry budget: first calls and retries decay by e each minute.
RETRY_WINDOW_S = 60.0
# Retries always allowed in a quiet window, so a lone question's failure is retried as
# before: the budget is for a fleet under load.
MIN_RETRIES = 3.0


def gcra_wait(at: float, per_minute: int, cost: float, now: float) -> float:
    """How long a draw of `cost` cells waits on a bucket next empty at `at`."""
    interval = 60.0 / per_minute
    tolerance = max(interval, BURST_S)
    start = max(at, now)
    return max(0.0, start + min(cost * interval, tolerance) - tolerance - now)


def gcra_take(at: float, per_minute: int, cost: float, now: float) -> float:
    """The bucket's new `at` once `cost` cells are taken."""
    return max(at, now) + cost * 60.0 / per_minute


def live(held: Mapping[str, float], now: float) -> dict[str, float]:
    return {ticket: until for ticket, until in held.items() if until > now}


def draw(
    buckets: Mapping[str, Bucket],
    claims: Sequence[Claim],
    *,
    now: float,
    most_wait: float,
    ticket: str,
    hold: float,
) -> tuple[Grant, dict[str, Bucket]]:
    """The grant for `claims` together, and the buckets it changes (none when refused).

    Every allowance is judged before any is taken, so a call either takes its place in all
    of them or in none; the longest wait among them is the call's."""
    wait, blocking, full = 0.0, "", False
    for claim in claims:
        b, lim = buckets.get(claim.name, EMPTY_BUCKET), claim.limits
        for what, at, rate, cost in (
            ("rpm", b.requests_at, lim.rpm, 1.0),
            ("tpm", b.tokens_at, lim.tpm, float(claim.tokens)),
        ):
            if rate is not None:
                w = gcra_wait(at, rate, cost, now)
                if w > wait:
                    wait, blocking = w, f"{claim.name} {what}"
        if lim.concurrent is not None:
            slots = live(b.held, now)
            if len(slots) >= lim.concurrent:
                freed = max(0.0, min(slots.values()) - now)
                full, wait = True, max(wait, min(freed, SLOT_POLL_S))
                blocking = f"{claim.name} concurrent"
    if full or wait > most_wait:
        return Grant(False, wait, blocking), {}
    changed: dict[str, Bucket] = {}
    for claim in claims:
        b, lim = buckets.get(claim.name, EMPTY_BUCKET), claim.limits
        requests_at, tokens_at, held = b.requests_at, b.tokens_at, dict(b.held)
        if lim.rpm is not None:
            requests_at = gcra_take(requests_at, lim.rpm, 1.0, now)
        if lim.tpm is not None:
            tokens_at = gcra_take(tokens_at, lim.tpm, float(claim.tokens), now)
        if lim.concurrent is not None:
            held = live(held, now)
            held[ticket] = now + wait + hold
        changed[claim.name] = Bucket(requests_at, tokens_at, held)
    return Grant(True, wait, blocking, ticket, tuple(claims)), changed


def settle(
    buckets: Mapping[str, Bucket], grant: Grant, *, used: int | None, now: float
) -> dict[str, Bucket]:
    """The buckets once a granted call ended: the tokens it reserved but did not use are
    given back (or what it used beyond them taken), and its slots released. `used`: the
    provider's reported input plus output (None: not reported, the reservation stands)."""
    changed: dict[str, Bucket] = {}
    for claim in grant.claims:
        b = buckets.get(claim.name)
        if b is None:
            continue
        tokens_at = b.tokens_at
        if claim.limits.tpm is not None and used is not None:
            tokens_at -= (claim.tokens - used) * 60.0 / claim.limits.tpm
        held = {t: u for t, u in live(b.held, now).items() if t != grant.ticket}
        changed[claim.name] = Bucket(b.requests_at, tokens_at, held)
    return changed


def decayed(tally: Tally, now: float) -> Tally:
    factor = math.exp(-max(0.0, now - tally.at) / RETRY_WINDOW_S)
    return Tally(tally.requests * factor, tally.retries * factor, now)


def counted(tally: Tally, now: float) -> Tally:
    """`tally` with one more first call."""
    t = decayed(tally, now)
    return Tally(t.requests + 1.0, t.retries, now)


def retried(tally: Tally, share: float, now: float) -> Tally | None:
    """`tally` with one more retry; None when the budget is spent: retries would pass
    `share` of the recent first calls (and the few always allowed)."""
    t = decayed(tally, now)
    if t.retries + 1.0 > max(MIN_RETRIES, share * t.requests):
        return None
    return Tally(t.requests, t.retries + 1.0, now)


def ahead(at: float, now: float) -> float:
    """How many seconds of a bucket are booked beyond now."""
    return max(0.0, at - now)


def alone(claims: Sequence[Claim]) -> tuple[Claim, ...]:
    """`claims` on a process's own share of each limit (the shared store is out of reach)."""
    return tuple(Claim(c.name, c.limits.share(), c.tokens) for c in claims)


def limits_of(claims: Sequence[Claim]) -> dict[str, Limits]:
    return {c.name: c.limits for c in claims}
