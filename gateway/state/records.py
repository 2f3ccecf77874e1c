"""What every state store holds and hands back: the state itself, a probe's lease, one
question's snapshot, and the limits that keep the state bounded.

Cooldowns themselves are `gateway.model.Cooldown`: the vocabulary every layer speaks.
These are immutable NamedTuples rather than frozen dataclasses: every question imports
them, and a NamedTuple costs half as much to define (a dataclass generates and compiles
its methods at import).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from gateway.model import Cooldown

_NO_LEASES: Mapping[str, Lease] = MappingProxyType({})
_NO_COOLDOWNS: Mapping[str, Cooldown] = MappingProxyType({})
_NO_CURSORS: Mapping[str, int] = MappingProxyType({})


class Lease(NamedTuple):
    """The right to send the one probe after a cooldown ended, until `until` (epoch s)."""

    until: float
    holder: str  # random, per store instance: tells whose lease it is, names no one


class State(NamedTuple):
    """Everything a store keeps. `salt` is created with the state and kept for its life:
    the fingerprints of keys depend on it."""

    salt: str | None
    entries: Mapping[str, Cooldown]
    leases: Mapping[str, Lease] = _NO_LEASES
    cursors: Mapping[str, int] = _NO_CURSORS  # round-robin, per deployment


EMPTY = State(None, {})


class Snapshot(NamedTuple):
    """One read of the state for one question.

    `cooling`: in force now, skip. `due`: ended but not yet followed by a success, so the
    next call is the probe and only the holder of its lease may send it. `probing`: names
    whose probe lease someone holds now. `cursors`: each round-robin deployment's cursor,
    read before this question advanced it. `present`: every record there is (void ones
    too), so a success clears what it should and writes nothing when there is nothing.
    """

    cooling: Mapping[str, Cooldown]
    due: Mapping[str, Cooldown] = _NO_COOLDOWNS
    probing: frozenset[str] = frozenset()
    cursors: Mapping[str, int] = _NO_CURSORS
    present: frozenset[str] = frozenset()


# An empty state's snapshot, the same for every reader (its mappings read-only).
NOTHING_SEEN = Snapshot(_NO_COOLDOWNS)


class StateBounds(NamedTuple):
    """What keeps the state honest and bounded.

    `max_cooldown`: no deadline further ahead than this is believed (clock skew, garbage, a
    server asking for 7 days). `remember`: how long an ended cooldown is kept waiting for
    its probe; after that the deployment is simply tried. `max_entries`: the most records
    kept, the latest deadlines first, so the state cannot grow without bound.
    """

    max_cooldown: float = 3600.0
    remember: float = 3600.0
    max_entries: int = 1000


DEFAULT_BOUNDS = StateBounds()
