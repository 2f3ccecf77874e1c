"""One cooldown record as JSON, the same in the state file and in Redis: what is written,
and what is believed when read back (a record that cannot be believed is refused with the
reason, so the store can drop it and keep the others)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.model import Cooldown, CooldownBasis, ErrorKind
from gateway.state import rules

_KINDS = frozenset(kind.value for kind in ErrorKind)
_BASES = frozenset(basis.value for basis in CooldownBasis)


class BadEntry(Exception):
    """A record that cannot be believed; the message says why."""


def time_of(raw: Mapping[str, object], key: str) -> float:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadEntry(f"its {key} is not a number")
    if not rules.sane_time(float(value)):
        raise BadEntry(f"its {key} ({value!r}) is not a believable time")
    return float(value)


def _optional(raw: Mapping[str, object], key: str, kind: type) -> object:
    value = raw.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise BadEntry(f"its {key} is not a {kind.__name__}")
    return value


def load(name: str, raw: object) -> Cooldown:
    if not isinstance(raw, dict):
        raise BadEntry("it is not an object")
    kind, basis = raw.get("kind"), raw.get("basis", CooldownBasis.POLICY.value)
    if not isinstance(kind, str) or kind not in _KINDS:
        raise BadEntry("its kind is unknown")
    if not isinstance(basis, str) or basis not in _BASES:
        raise BadEntry("its basis is unknown")
    until, started = time_of(raw, "until"), time_of(raw, "started")
    if until < started:
        raise BadEntry("it ends before it started")
    trips = _optional(raw, "trips", int)
    status, code = _optional(raw, "status", int), _optional(raw, "code", str)
    deployment, credential = _optional(raw, "deployment", str), _optional(raw, "credential", str)
    return Cooldown(
        name=name,
        deployment=str(deployment or name),
        until=until,
        kind=ErrorKind(kind),
        started=started,
        status=status if isinstance(status, int) else None,
        code=code if isinstance(code, str) else None,
        trips=max(1, trips) if isinstance(trips, int) else 1,
        basis=CooldownBasis(basis),
        credential=credential if isinstance(credential, str) else None,
    )


def dump(c: Cooldown) -> dict[str, object]:
    out: dict[str, object] = {
        "until": c.until,
        "kind": str(c.kind),
        "started": c.started,
        "trips": c.trips,
        "basis": str(c.basis),
        "status": c.status,
        "code": c.code,
        "credential": c.credential,
    }
    if c.deployment != c.name:
        out["deployment"] = c.deployment
    return out
