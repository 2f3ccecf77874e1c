"""The rules every store follows, as pure functions over `State`: only ever extend, a
success clears, a failure after a cooldown ended doubles the next one, nothing beyond
`max_cooldown` is believed, one lease per probe, and the state stays bounded.

`merge` is the rule for one record; the Redis store runs the same rule on the server (a Lua
script), and tests run one table of cases against every store.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping

from gateway.model import Cooldown, CooldownBasis
from gateway.record import replace
from gateway.secrets.key import Secret
from gateway.state.records import NOTHING_SEEN, Lease, Snapshot, State, StateBounds

# Deadlines before 1970 or after the year 5000 are garbage, not a cooldown.
_LATEST = 95_617_584_000.0


def new_salt() -> str:
    return os.urandom(16).hex()


def fingerprint(credential: Secret | None, salt: str) -> str | None:
    return None if credential is None else credential.fingerprint(bytes.fromhex(salt))


def sane_time(value: float) -> bool:
    """Whether an epoch time read from a store can be believed at all."""
    return math.isfinite(value) and 0 < value < _LATEST


def believed(entry: Cooldown, now: float, limits: StateBounds) -> Cooldown:
    """`entry` with a deadline no further than `max_cooldown` past its start (or past now,
    for a start in the future: another machine's clock running ahead)."""
    latest = min(entry.started, now) + limits.max_cooldown
    return entry if entry.until <= latest else replace(entry, until=latest)


def applies(entry: Cooldown, salt: str | None, credentials: Mapping[str, Secret | None]) -> bool:
    """Whether `entry` still concerns the key in use: one bound to a key (a salted
    fingerprint) is void once that key changed or was removed."""
    if entry.credential is None:
        return True
    key = credentials.get(entry.name)
    return key is not None and salt is not None and fingerprint(key, salt) == entry.credential


def snapshot(
    state: State,
    now: float,
    credentials: Mapping[str, Secret | None],
    limits: StateBounds,
    *,
    cursors: Collection[str] = (),
) -> Snapshot:
    if not (state.entries or state.leases or cursors):
        # The common state, a healthy fleet's: nothing to walk and nothing to build.
        return NOTHING_SEEN
    cooling: dict[str, Cooldown] = {}
    due: dict[str, Cooldown] = {}
    for name, raw in state.entries.items():
        if not applies(raw, state.salt, credentials):
            continue
        entry = believed(raw, now, limits)
        if entry.until > now:
            cooling[name] = entry
        elif entry.until + limits.remember > now:
            due[name] = entry
    probing = frozenset(name for name, lease in state.leases.items() if lease.until > now)
    return Snapshot(
        cooling,
        due,
        probing,
        {name: state.cursors.get(name, 0) for name in cursors},
        frozenset(state.entries) | frozenset(state.leases),
    )


def merge(old: Cooldown | None, new: Cooldown, now: float, cap: float) -> Cooldown | None:
    """The record to keep when `new` is taken over `old`; None: keep `old` as it is.

    - Nothing is believed beyond `cap` (policy.max_cooldown) from now.
    - Only ever extend, among cooldowns for the same key: a shorter one leaves a longer one
      alone, so two machines racing keep the longer.
    - A failure after `old` ended (the probe failed) cools for at least twice as long as
      `old` did, up to `cap`, and counts one more trip.
    """
    until = min(new.until, now + cap)
    if until <= now:
        return None  # already over: recording it would change nothing a reader sees
    basis = new.basis if until == new.until else CooldownBasis.CAPPED
    if old is None or old.credential not in (None, new.credential):
        # A cooldown bound to a key that has since changed no longer holds anything back.
        return replace(new, until=until, basis=basis, trips=1)
    if old.until > now:
        if old.until >= until:
            return None
        return replace(new, until=until, basis=basis, trips=old.trips)
    doubled = min(cap, 2 * (old.until - old.started))
    if now + doubled > until:
        until, basis = now + doubled, CooldownBasis.ESCALATED
    return replace(new, until=until, basis=basis, trips=old.trips + 1)


def cool(
    state: State,
    new: Cooldown,
    *,
    now: float,
    cap: float,
    credential: Secret | None,
    limits: StateBounds,
    known: Collection[str] | None,
) -> State | None:
    """`state` with `new` taken (bound to `credential`, when given); None: nothing changes.
    The probe's lease, if any, ends with it: the probe has had its answer."""
    salt = state.salt or new_salt()
    new = replace(new, credential=fingerprint(credential, salt))
    merged = merge(state.entries.get(new.name), new, now, cap)
    if merged is None:
        return None
    entries = dict(state.entries)
    entries[new.name] = merged
    leases = {k: v for k, v in state.leases.items() if k != new.name}
    return prune(State(salt, entries, leases, state.cursors), now, limits, known)


def clear(state: State, name: str | None) -> State | None:
    """Forget one record (a success) and its lease, or every record (None)."""
    if name is None:
        if not state.entries and not state.leases:
            return None
        return State(state.salt, {}, {}, state.cursors)
    if name not in state.entries and name not in state.leases:
        return None
    return State(
        state.salt,
        {k: v for k, v in state.entries.items() if k != name},
        {k: v for k, v in state.leases.items() if k != name},
        state.cursors,
    )


def take_lease(state: State, name: str, lease: Lease, now: float) -> State | None:
    """`state` with `lease` on `name`; None while a lease on it still holds (even one this
    process took: each probe is one call)."""
    held = state.leases.get(name)
    if held is not None and held.until > now:
        return None
    return State(state.salt, state.entries, {**state.leases, name: lease}, state.cursors)


def advance(state: State, names: Collection[str]) -> State:
    """Each round-robin cursor in `names` moved on by one."""
    cursors = dict(state.cursors)
    for name in names:
        cursors[name] = cursors.get(name, 0) + 1
    return State(state.salt, state.entries, state.leases, cursors)


def prune(state: State, now: float, limits: StateBounds, known: Collection[str] | None) -> State:
    """`state` without what no reader needs: cooldowns ended longer ago than `remember`,
    expired leases, records of names no longer configured (`known`, when given), and past
    `max_entries` the records that end soonest."""

    def wanted(name: str) -> bool:
        return known is None or name in known

    entries = {
        name: e
        for name, e in state.entries.items()
        if wanted(name) and min(e.until, e.started + limits.max_cooldown) + limits.remember > now
    }
    if len(entries) > limits.max_entries:
        latest = sorted(entries.values(), key=lambda e: e.until, reverse=True)
        entries = {e.name: e for e in latest[: limits.max_entries]}
    leases = {k: v for k, v in state.leases.items() if wanted(k) and v.until > now}
    cursors = {k: v for k, v in state.cursors.items() if wanted(k)}
    return State(state.salt, entries, leases, cursors)
