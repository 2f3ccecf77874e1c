"""The allowances' rules as pure functions: the generic cell rate algorithm (GCRA) for
requests and tokens a minute, slots for calls at once, and the retry budget.

A rate of R a minute is one cell every 60/R seconds, with a burst of one second's worth
(at least one cell): providers enforce a minute's limit over much shorter windows, so a
minute's worth at once would be refused. A call larger than the burst (a long prompt
against a small token limit) waits for an empty bucket, then goes. The Redis allowance
runs the same arithmetic in Lua on the server's clock; tests run one table of cases
against every allowance.

A booking never starts sooner than `MARGIN_S` from now (`gcra_take`): the allowance books
when a call starts, the provider counts when it arrives, and the first call of a burst
(a fresh process, a new connection) arrives latest. The provider's bucket starts to
refill only then, so a call booked exactly one interval behind the burst, arriving a few
milliseconds sooner than the first did, would meet a bucket a hair short of its last
token and get a 429. With the margin, a burst that finds the bucket empty is booked as
if it had started that much later: the provider always has that much of its refill in
hand. It costs the rate nothing once busy (a bucket booked ahead is taken from where it
stands), only `MARGIN_S` of it each time a quiet allowance gets busy.

A provider's rate-limit headers (`gateway.model.Headroom`) tighten the allowance they
speak for (`tightening`, `tighten`): its stated limit holds where it is lower than the
configured one, and the bucket is booked at least as far ahead as the provider's stood,
so a key another application also uses paces this fleet down to what is left rather than
into 429s. They never loosen: a bucket is only ever moved later, and the
configured limit still holds.

Until the provider has stated its figures, the allowance its headers speak for starts
slow (`cold`): one call at a time, fleet-wide, goes first (a slot in its `held`, where
calls at once are kept) and the others wait for it (`Bound.FIRST_CALL`) as for any
limit, until its response books the provider's figures; from then on they pace the
fleet. A fleet of processes that each sent a burst before any response was read would
meet the provider's bucket all at once (bench/RESULTS.md, "A fleet within its quota"),
and so would a configured limit set too high, whose call draws on this allowance too. A
first call that never settles frees itself after `FIRST_CALL_S` (or the call's own
timeout, if shorter); one that failed frees its slot for the next call to go first; one
answered without any figures (a provider that states none) leaves the allowance unheld
for `QUIET_S`. The figures last as long as the allowance's ledger entry does: once it is
forgotten, the next call goes first again. ("Probe" is the cooldowns' word, for the one
call after a cooldown ends: `gateway.engine.turns`.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gateway.config.model import Limits
from gateway.limits.records import EMPTY_BUCKET, Bound, Bucket, Claim, Grant, Tally, Tightening
from gateway.model import Headroom, Window

BURST_S = 1.0
# How much sooner a call may reach the provider than the first of its burst did (whose
# process may still be opening its connection, or waiting for a CPU on a loaded machine:
# bench/RESULTS.md, "A fleet within its quota", saw more than a tenth of a second), and a
# quarter of the burst, so a fast rate still sends most of it at once.
MARGIN_S = 0.25
# Calls at once are not booked ahead: a full allowance is looked at again this soon.
SLOT_POLL_S = 0.25
# What "recent" means for the retry budget: first calls and retries decay by e each minute.
RETRY_WINDOW_S = 60.0
# Retries always allowed in a quiet window, so a lone question's failure is retried as
# before: the budget is for a fleet under load.
MIN_RETRIES = 3.0
# The longest the slow start's first call holds the fleet back when it never settles (its
# process died, its call hangs): a few seconds, against a call's timeout of a minute.
FIRST_CALL_S = 5.0
# How long an answer that stated no figures leaves a cold allowance unheld before the
# next call goes first again.
QUIET_S = 60.0


def _lowest(configured: int | None, stated: float) -> float | None:
    if stated <= 0:
        return None if configured is None else float(configured)
    return stated if configured is None else min(float(configured), stated)


class Held(NamedTuple):
    """What a claim is held to: requests and tokens a minute, calls at once (None: no
    limit of that kind)."""

    rpm: float | None
    tpm: float | None
    concurrent: int | None


def _part(value: float | None, fleet_size: int) -> float | None:
    # Never none at all: a process on its own may always make one call a minute.
    return None if value is None else max(1.0, value / fleet_size)


def held_to(claim: Claim, bucket: Bucket, *, alone: bool = False) -> Held:
    """What `claim` is held to: for each rate the lower of its configured limit and the
    provider's stated one. `alone` (the shared store is out of reach): this process's
    share of each, the whole divided by `limits.fleet_size`, for the provider's stated
    limits as for the configured ones: the provider counts every process on the key, so
    each paces as though its share were all the key had."""
    lim = claim.limits
    rpm = _lowest(lim.rpm, bucket.requests_rate)
    tpm = _lowest(lim.tpm, bucket.tokens_rate)
    if not alone:
        return Held(rpm, tpm, lim.concurrent)
    n = lim.fleet_size
    concurrent = _part(lim.concurrent, n)
    return Held(_part(rpm, n), _part(tpm, n), None if concurrent is None else int(concurrent))


def cold(claim: Claim, bucket: Bucket, now: float) -> bool:
    """Whether `claim` starts slow: the provider's headers speak for it, have stated no
    figure yet, and have not answered a first call without any lately."""
    return (
        claim.stated
        and bucket.requests_rate <= 0
        and bucket.tokens_rate <= 0
        and bucket.quiet_until <= now
    )


def limited(claim: Claim, bucket: Bucket, now: float) -> bool:
    """Whether anything limits `claim` yet: a configured limit, one its provider stated,
    or the slow start."""
    return any(v is not None for v in held_to(claim, bucket)) or cold(claim, bucket, now)


def gcra_wait(at: float, per_minute: float, cost: float, now: float) -> float:
    """How long a draw of `cost` cells waits on a bucket next empty at `at`."""
    interval = 60.0 / per_minute
    tolerance = max(interval, BURST_S)
    start = max(at, now)
    return max(0.0, start + min(cost * interval, tolerance) - tolerance - now)


def gcra_take(at: float, per_minute: float, cost: float, now: float) -> float:
    """The bucket's new `at` once `cost` cells are taken: booked from where it stands, but
    never from sooner than `MARGIN_S` ahead (the provider's refill starts when the call
    arrives, not when it starts)."""
    return max(at, now + MARGIN_S) + cost * 60.0 / per_minute


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
    alone: bool = False,
) -> tuple[Grant, dict[str, Bucket]]:
    """The grant for `claims` together, and the buckets it changes (none when refused);
    `alone`: on this process's share of each (`held_to`).

    Every allowance is judged before any is taken, so a call either takes its place in all
    of them or in none; the longest wait among them is the call's."""
    wait, full = 0.0, False
    blocking: tuple[str, Bound | None] = ("", None)
    taken: list[Claim] = []
    for claim in claims:
        b = buckets.get(claim.name, EMPTY_BUCKET)
        rpm, tpm, concurrent = held_to(claim, b, alone=alone)
        if not limited(claim, b, now):
            continue  # nothing limits it (yet): nothing to book, nothing to settle
        taken.append(claim)
        if cold(claim, b, now) and (first := live(b.held, now)):
            freed = max(0.0, min(first.values()) - now)
            full, wait = True, max(wait, min(freed, SLOT_POLL_S))
            blocking = (claim.name, Bound.FIRST_CALL)
        for bound, at, rate, cost in (
            (Bound.RPM, b.requests_at, rpm, 1.0),
            (Bound.TPM, b.tokens_at, tpm, float(claim.tokens)),
        ):
            if rate is not None:
                w = gcra_wait(at, rate, cost, now)
                if w > wait:
                    wait, blocking = w, (claim.name, bound)
        if concurrent is not None:
            slots = live(b.held, now)
            if len(slots) >= concurrent:
                freed = max(0.0, min(slots.values()) - now)
                full, wait = True, max(wait, min(freed, SLOT_POLL_S))
                blocking = (claim.name, Bound.CONCURRENT)
    if full or wait > most_wait:
        return Grant(False, wait, *blocking), {}
    changed: dict[str, Bucket] = {}
    for claim in taken:
        b = buckets.get(claim.name, EMPTY_BUCKET)
        rpm, tpm, concurrent = held_to(claim, b, alone=alone)
        requests_at, tokens_at, held = b.requests_at, b.tokens_at, dict(b.held)
        if rpm is not None:
            requests_at = gcra_take(requests_at, rpm, 1.0, now)
        if tpm is not None:
            tokens_at = gcra_take(tokens_at, tpm, float(claim.tokens), now)
        if concurrent is not None:
            held = live(held, now)
            held[ticket] = now + wait + hold
        elif cold(claim, b, now):  # the first call
            held = live(held, now)
            held[ticket] = now + wait + min(hold, FIRST_CALL_S)
        changed[claim.name] = b._replace(requests_at=requests_at, tokens_at=tokens_at, held=held)
    return Grant(True, wait, *blocking, ticket, tuple(taken)), changed


def settle(
    buckets: Mapping[str, Bucket],
    grant: Grant,
    *,
    used: int | None,
    now: float,
    answered: bool = False,
    alone: bool = False,
) -> dict[str, Bucket]:
    """The buckets once a granted call ended: the tokens it reserved but did not use are
    given back (or what it used beyond them taken) at the rate they were taken at, and
    its slots released. `used`: the provider's reported input plus output (None: not
    reported, the reservation stands). `answered`: the provider answered it; a cold
    allowance's first call answered goes quiet (`QUIET_S`) unless a tightening applied
    after books the provider's figures."""
    changed: dict[str, Bucket] = {}
    for claim in grant.claims:
        b = buckets.get(claim.name)
        if b is None:
            continue
        tokens_at, tpm = b.tokens_at, held_to(claim, b, alone=alone).tpm
        if tpm is not None and used is not None:
            tokens_at -= (claim.tokens - used) * 60.0 / tpm
        held = {t: u for t, u in live(b.held, now).items() if t != grant.ticket}
        quiet = b.quiet_until
        if answered and cold(claim, b, now):
            quiet = now + QUIET_S
        changed[claim.name] = b._replace(tokens_at=tokens_at, held=held, quiet_until=quiet)
    return changed


def _provider_ahead(window: Window, rate: float) -> float:
    """How far ahead of the call's start the provider's own bucket stood, once the call
    was counted, in this allowance's terms: a draw may go at once while a burst
    (`BURST_S` of the rate) is free, so what is left is that much less booked."""
    interval = 60.0 / rate
    return max(0.0, max(interval, BURST_S) - window.remaining * interval)


def tightening(
    seen: Headroom, name: str, claims: Sequence[Claim], *, ago: float
) -> Tightening | None:
    """What the provider's `seen` headers do to the allowance `name` they speak for; None:
    nothing (they state no limit, and the provider's bucket is no fuller than a burst's
    worth). `claims` are the call's (with their configured limits), `ago` how many seconds
    since it was sent: the provider counted it then, so its bucket stood that much further
    ahead then.

    A limit the provider stated is booked even when nearly all of it is left (a bucket
    not moved): it is what paces the fleet from then on, and what ends a cold start
    (`cold`). Dropped, a cold allowance's first call answered with a full window would
    leave it unheld for `QUIET_S`, as though the provider stated nothing, and a fleet's
    burst would go unpaced into the provider's short window.

    The allowance is booked at least as far ahead as the provider's bucket stood, never
    moved by more: what the fleet booked since stays on top of it only where the fleet
    had booked further (a floor can be met twice by the responses of calls in flight at
    once; a shift added by each would count the same calls again). A window whose limit
    the provider did not state (Azure's) is read against the lowest configured one, which
    then stands as its limit; with neither, it says nothing that can be paced."""
    moved: list[float] = []
    said = False  # the provider stated a limit
    for window, configured in (
        (seen.requests, [c.limits.rpm for c in claims if c.limits.rpm]),
        (seen.tokens, [c.limits.tpm for c in claims if c.limits.tpm]),
    ):
        stated = float(window.limit) if window is not None and window.limit else 0.0
        said = said or stated > 0
        rate = stated or float(min(configured, default=0))
        ahead = _provider_ahead(window, rate) - ago if window is not None and rate > 0 else 0.0
        moved += [ahead, rate]
    if moved[0] <= 0 and moved[2] <= 0 and not said:
        return None
    return Tightening(name, *moved)


def tighten(buckets: Mapping[str, Bucket], t: Tightening, now: float) -> dict[str, Bucket]:
    """The bucket `t` names once tightened: booked at least as far ahead as the provider's
    numbers say (never earlier), with the limits they were read against."""
    b = buckets.get(t.name, EMPTY_BUCKET)
    return {
        t.name: b._replace(
            requests_at=max(b.requests_at, now + t.requests_ahead),
            tokens_at=max(b.tokens_at, now + t.tokens_ahead),
            requests_rate=t.requests_rate or b.requests_rate,
            tokens_rate=t.tokens_rate or b.tokens_rate,
        )
    }


def decayed(tally: Tally, now: float) -> Tally:
    factor = math.exp(-max(0.0, now - tally.at) / RETRY_WINDOW_S)
    return Tally(tally.requests * factor, tally.retries * factor, now)


def counted(tally: Tally, now: float) -> Tally:
    """`tally` with one more first call."""
    t = decayed(tally, now)
    return Tally(t.requests + 1.0, t.retries, now)


def merged(tally: Tally, more: Tally, now: float) -> Tally:
    """`tally` with `more` (first calls and retries counted elsewhere) added, both as of now."""
    a, b = decayed(tally, now), decayed(more, now)
    return Tally(a.requests + b.requests, a.retries + b.retries, now)


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


def limits_of(claims: Sequence[Claim]) -> dict[str, Limits]:
    return {c.name: c.limits for c in claims}
