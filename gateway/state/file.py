"""Cooldowns in a versioned JSON file shared by every invocation on one machine.

Reads take no lock: the file is only ever replaced whole (os.replace), so a reader sees the
old or the new version, never half of one. Every change takes an exclusive lock on a file
beside it (`<path>.lock`, never deleted: deleting a lock file races), re-reads under the
lock, and writes a temporary file that replaces the state: concurrent invocations lose no
update. A change that would change nothing writes nothing.

No problem with the file reaches the caller. A bad entry (a time that is NaN, infinite or
absurd, an unknown kind) is dropped with a warning and the others kept; a bad file is set
aside as `<path>.corrupt` (never over an earlier copy) and replaced; a file written by a
newer support-ask is left alone; a file that cannot be written is reported once and the
cooldowns are kept in memory for the rest of the run. A read-only store (the `cooldowns`
listing) reports and never moves, rewrites or creates anything.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple

from gateway.model import Cooldown
from gateway.state import codec, rules
from gateway.state.local import Change, LocalStore
from gateway.state.records import DEFAULT_BOUNDS, EMPTY, Lease, State, StateBounds
from gateway.state.replace import locked, replace_whole

VERSION = 1
# Far more than `max_entries` records ever take: a larger file was not written by us, and
# reading it on every question would cost seconds.
MAX_BYTES = 1 << 20
# `.corrupt`, then `.corrupt.1` ... : a second bad file never replaces the first one's copy.
_ASIDE_COPIES = 10

Warn = Callable[[str], None]


class _BadFile(Exception):
    """The state file exists but cannot be used. `movable`: can be set aside and replaced."""

    def __init__(self, reason: str, *, movable: bool = True, state: str = "corrupt") -> None:
        super().__init__(reason)
        self.reason = reason
        self.movable = movable
        self.state = state  # how the warning describes the file


class _Newer(_BadFile):
    """A file of a later version: another support-ask's, not ours to replace."""


class _Parsed(NamedTuple):
    """A file as read: its state, and one reason per entry that could not be believed.
    (A NamedTuple: every question imports this module, and a dataclass costs ten times
    as much to define.)"""

    state: State
    dropped: tuple[str, ...] = ()


def _parse(data: bytes) -> _Parsed:
    if len(data) > MAX_BYTES:
        raise _BadFile(f"{len(data):,} bytes, far more than any state this tool writes")
    if not data.strip():
        raise _BadFile("empty")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _BadFile(f"not valid JSON, perhaps truncated: {exc}") from None
    if not isinstance(doc, dict):
        raise _BadFile("not a JSON object")
    version = doc.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise _Newer(
            f"version {version}, written by a newer support-ask (this one reads version "
            f"{VERSION}); it is left as it is",
            movable=False,
            state="not readable here",
        )
    if version != VERSION:
        raise _BadFile(f"version {version!r}, this support-ask reads version {VERSION}")
    salt, cooldowns = doc.get("salt"), doc.get("cooldowns")
    if not isinstance(salt, str) or not isinstance(cooldowns, dict):
        raise _BadFile("salt or cooldowns missing")
    try:
        bytes.fromhex(salt)
    except ValueError:
        raise _BadFile("the salt is not hex") from None
    entries: dict[str, Cooldown] = {}
    dropped: list[str] = []
    for name, raw in cooldowns.items():
        try:
            entries[name] = codec.load(name, raw)
        except codec.BadEntry as bad:
            dropped.append(f"the entry for {name!r} was dropped: {bad}")
    leases: dict[str, Lease] = {}
    raw_leases = doc.get("leases")
    for name, raw in (raw_leases if isinstance(raw_leases, dict) else {}).items():
        try:
            holder = raw.get("holder") if isinstance(raw, dict) else None
            if not isinstance(holder, str):
                raise codec.BadEntry("no holder")
            leases[name] = Lease(codec.time_of(raw, "until"), holder)
        except codec.BadEntry:
            continue  # a lease is seconds long: a bad one is simply not honoured
    raw_cursors = doc.get("cursors")
    cursors = {
        name: value
        for name, value in (raw_cursors if isinstance(raw_cursors, dict) else {}).items()
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
    }
    return _Parsed(State(salt, entries, leases, cursors), tuple(dropped))


def _dump(state: State) -> bytes:
    doc = {
        "version": VERSION,
        "salt": state.salt or rules.new_salt(),
        "cooldowns": {name: codec.dump(c) for name, c in sorted(state.entries.items())},
        "leases": {
            name: {"until": lease.until, "holder": lease.holder}
            for name, lease in sorted(state.leases.items())
        },
        "cursors": dict(sorted(state.cursors.items())),
    }
    # Compact: json's C encoder (an indent falls back to the pure-Python one, 5x slower).
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


class FileStore(LocalStore):
    def __init__(
        self,
        path: Path,
        *,
        warn: Warn | None = None,
        read_only: bool = False,
        limits: StateBounds = DEFAULT_BOUNDS,
        known: Collection[str] | None = None,
    ) -> None:
        super().__init__(limits=limits, known=known)
        self.path = path
        self.read_only = read_only
        self._warn_sink: Warn = warn or logging.getLogger("support_ask.state").warning
        self._warned: set[str] = set()
        self._memory: State | None = None  # set once the file proved unwritable
        self._seen_bytes: bytes | None = None  # the file's bytes when last parsed, and
        self._seen: _Parsed | None = None  # what they parsed to

    # -- reading

    def _read(self) -> _Parsed:
        """The file as it is now; raises _BadFile, or FileNotFoundError for a missing file."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            raise
        except IsADirectoryError:
            raise _BadFile("it is a directory", movable=False) from None
        except OSError as exc:
            raise _BadFile(str(exc.strerror or exc), state="unreadable") from None
        # A question reads the file up to three times (its look, a change's lockless look,
        # the read under the lock), and it rarely changes in between: parse it once.
        if data != self._seen_bytes:
            self._seen = _parse(data)  # raises _BadFile, leaving the last good parse alone
            self._seen_bytes = data
        assert self._seen is not None
        return self._seen

    def _load(self) -> State:
        """The state for a read. A bad file or entry is recovered from here, so it is
        reported once and the next invocation finds a good file again."""
        if self._memory is not None:
            return self._memory
        try:
            parsed = self._read()
        except FileNotFoundError:
            return EMPTY
        except _BadFile as bad:
            if self.read_only or isinstance(bad, _Newer):
                self._report(bad)
                if isinstance(bad, _Newer):
                    # Honour nothing, change nothing: this run's cooldowns stay in memory.
                    self._memory = State(rules.new_salt(), {})
                    return self._memory
                return EMPTY
            return self._update(lambda state: None, known_bad=bad)
        if parsed.dropped:
            if self.read_only:
                for reason in parsed.dropped:
                    self._warn(f"state file {self.path}: {reason}")
                return parsed.state
            return self._update(lambda state: None, rewrite=True)
        return parsed.state

    # -- writing

    def _update(
        self, change: Change, *, known_bad: _BadFile | None = None, rewrite: bool = False
    ) -> State:
        """Apply `change` under the lock and return the state now in force. `rewrite`:
        write the file even if nothing changes (to drop entries that could not be read)."""
        if self._memory is not None:
            self._memory = change(self._memory) or self._memory
            return self._memory
        state = EMPTY
        if known_bad is None and not rewrite:
            # The lockless look first: most changes (clearing a deployment that is not
            # cooling down, re-cooling one already cooling longer) change nothing.
            seen: State | None
            try:
                parsed = self._read()
                seen = None if parsed.dropped else parsed.state
            except FileNotFoundError:
                seen = EMPTY
            except _BadFile:
                seen = None  # recovered under the lock below
            if seen is not None:
                if change(seen) is None:
                    return seen
                state = seen
        if self.read_only:
            return change(state) or state  # shown, never written
        try:
            with self._locked():
                parsed = self._read_locked()
                state = parsed.state
                changed = change(state)
                if changed is None and parsed.dropped:
                    changed = state
                if changed is not None:
                    self._write(changed)
                    state = changed
                return state
        except _Newer as newer:
            self._report(newer)
            self._memory = change(State(rules.new_salt(), {})) or State(rules.new_salt(), {})
            return self._memory
        except OSError as exc:
            # Nothing here can be written (read-only dir, full disk, a directory in the
            # way): keep going in memory rather than fail a question over a cache.
            self._memory = change(state) or state
            self._warn(
                f"cannot write the state file {self.path} ({exc.strerror or exc}); "
                "cooldowns are kept in memory for this run only"
            )
            return self._memory

    def _read_locked(self) -> _Parsed:
        try:
            parsed = self._read()
        except FileNotFoundError:
            return _Parsed(EMPTY)
        except _Newer:
            raise
        except _BadFile as bad:
            if not bad.movable:
                raise OSError(bad.reason) from None
            aside = self._aside()
            os.replace(self.path, aside)
            self._warn(
                f"state file {self.path} was {bad.state} ({bad.reason}); starting fresh — "
                f"the bad copy was kept as {aside}"
            )
            return _Parsed(EMPTY)
        for reason in parsed.dropped:
            self._warn(f"state file {self.path}: {reason}")
        return parsed

    def _aside(self) -> Path:
        """Where to keep a bad file: the first free `.corrupt` name, else the last one."""
        names = [".corrupt", *(f".corrupt.{n}" for n in range(1, _ASIDE_COPIES))]
        candidates = [self.path.with_name(self.path.name + suffix) for suffix in names]
        return next((p for p in candidates if not p.exists()), candidates[-1])

    def _report(self, bad: _BadFile) -> None:
        self._warn(f"state file {self.path} is {bad.state} ({bad.reason}); ignoring it")

    def _locked(self) -> AbstractContextManager[None]:
        return locked(self.path)

    def _write(self, state: State) -> None:
        whole = _dump(state)
        replace_whole(self.path, whole)
        # What this process just wrote needs no parsing when it reads it back.
        self._seen_bytes, self._seen = whole, _Parsed(state)

    def _warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn_sink(message)
