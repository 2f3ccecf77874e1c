"""Allowances in a JSON file beside the state file: every process on one machine draws from
the same ledger.

Every draw reads the ledger, applies the rule and replaces the file whole under its lock
(`gateway.state.replace`): two processes never take the same place. A file that cannot be
read is started afresh (a ledger holds seconds of bookings, nothing worth keeping); one
that cannot be written is reported once, and the process keeps to its own share of each
limit (`limits.fleet_size`) in memory.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from pathlib import Path

from gateway.limits.local import Change, Ledger, LocalAllowance
from gateway.limits.records import Bucket, Tally
from gateway.state.replace import locked, replace_whole

VERSION = 1
MAX_BYTES = 1 << 20

Warn = Callable[[str], None]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("not a number")
    return float(value)


def _parse(data: bytes) -> Ledger:
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise ValueError("not a ledger of this version")
    buckets: dict[str, Bucket] = {}
    for name, raw in dict(doc.get("buckets") or {}).items():
        held = {str(t): _number(u) for t, u in dict(raw.get("held") or {}).items()}
        buckets[name] = Bucket(
            _number(raw["requests_at"]),
            _number(raw["tokens_at"]),
            held,
            _number(raw.get("requests_rate", 0.0)),
            _number(raw.get("tokens_rate", 0.0)),
            _number(raw.get("quiet_until", 0.0)),
        )
    tallies = {
        name: Tally(_number(raw["requests"]), _number(raw["retries"]), _number(raw["at"]))
        for name, raw in dict(doc.get("tallies") or {}).items()
    }
    return Ledger(buckets, tallies)


def _dump(ledger: Ledger) -> bytes:
    doc = {
        "version": VERSION,
        "buckets": {n: {**b._asdict(), "held": dict(b.held)} for n, b in ledger.buckets.items()},
        "tallies": {n: t._asdict() for n, t in ledger.tallies.items()},
    }
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


class FileAllowance(LocalAllowance):
    def __init__(self, path: Path, *, warn: Warn | None = None) -> None:
        super().__init__()
        self.path = path
        self._warn: Warn = warn or logging.getLogger("support_ask.state").warning
        self._memory: Ledger | None = None  # set once the file proved unwritable

    def _read(self) -> Ledger:
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
            return Ledger() if len(data) > MAX_BYTES else _parse(data)
        except FileNotFoundError:
            return Ledger()
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return Ledger()  # garbage: replaced by the next write

    def _load(self) -> Ledger:
        return self._read() if self._memory is None else self._memory

    def _update(self, change: Change) -> Ledger:
        if self._memory is not None:
            self._memory = change(self._memory) or self._memory
            return self._memory
        try:
            with locked(self.path):
                ledger = self._read()
                changed = change(ledger)
                if changed is None:
                    return ledger
                replace_whole(self.path, _dump(changed))
                return changed
        except OSError as exc:
            self._alone, self._memory = True, Ledger()
            self._warn(
                f"cannot write the limits file {self.path} ({exc.strerror or exc}); this "
                "run keeps to its own share of each limit (limits.fleet_size)"
            )
            return self._update(change)
