"""Cooldowns shared across invocations: a JSON file under a lock, or memory for tests.

The rules (only ever extend; a success clears; an auth cooldown ends when the key
changes) live in pure functions on `_State`, so both stores behave alike; `FileStore` only
adds the I/O: lockless reads (the file is only ever replaced whole), read-modify-write
under an exclusive lock, and recovery from any bad file without raising to the caller.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from gateway.model import Cooldown, ErrorKind
from gateway.secret import Secret

VERSION = 1
_KINDS = frozenset(kind.value for kind in ErrorKind)

Warn = Callable[[str], None]


@dataclass(frozen=True)
class _State:
    salt: str | None  # hex; created with the file, kept for its life: fingerprints depend on it
    entries: Mapping[str, Cooldown]


_EMPTY = _State(None, {})


def _new_salt() -> str:
    return os.urandom(16).hex()


def _fingerprint(credential: Secret | None, salt: str) -> str | None:
    return None if credential is None else credential.fingerprint(bytes.fromhex(salt))


def _in_force(
    entry: Cooldown, state: _State, now: float, credentials: Mapping[str, Secret | None]
) -> bool:
    if entry.until <= now:
        return False
    if entry.credential is None:
        return True
    # Bound to the key it failed with: a rotated (or removed) key is a new chance.
    key = credentials.get(entry.deployment)
    return (
        key is not None
        and state.salt is not None
        and _fingerprint(key, state.salt) == entry.credential
    )


def _active(
    state: _State, now: float, credentials: Mapping[str, Secret | None]
) -> dict[str, Cooldown]:
    return {
        name: entry
        for name, entry in state.entries.items()
        if _in_force(entry, state, now, credentials)
    }


def _cool(
    state: _State,
    deployment: str,
    *,
    until: float,
    kind: ErrorKind,
    now: float,
    detail: str,
    credential: Secret | None,
) -> _State | None:
    """`state` with the cooldown recorded and expired ones pruned; None when nothing changes."""
    salt = state.salt or _new_salt()
    new = Cooldown(deployment, until, kind, now, detail, _fingerprint(credential, salt))
    old = state.entries.get(deployment)
    # Only ever extend, among cooldowns that apply to the same key: one bound to a key that
    # has since changed no longer holds the deployment back, so a new one takes its place.
    if (
        old is not None
        and old.until > now
        and old.until >= until
        and old.credential in (None, new.credential)
    ):
        return None
    if until <= now:
        return None  # already over: recording it would change nothing a reader sees
    kept = {k: v for k, v in state.entries.items() if v.until > now and k != deployment}
    kept[deployment] = new
    return _State(salt, kept)


def _clear(state: _State, deployment: str | None) -> _State | None:
    if deployment is None:
        return _State(state.salt, {}) if state.entries else None
    if deployment not in state.entries:
        return None
    return _State(state.salt, {k: v for k, v in state.entries.items() if k != deployment})


class _Store(ABC):
    """The StateStore protocol, written once over the rules above: a store says only where
    its state lives (`_load`) and how a change reaches it (`_update`)."""

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        return _active(self._load(), now, credentials)

    def entries(self) -> list[Cooldown]:
        return sorted(self._load().entries.values(), key=lambda c: c.deployment)

    def cool(
        self,
        deployment: str,
        *,
        until: float,
        kind: ErrorKind,
        now: float,
        detail: str = "",
        credential: Secret | None = None,
    ) -> None:
        def change(state: _State) -> _State | None:
            return _cool(
                state,
                deployment,
                until=until,
                kind=kind,
                now=now,
                detail=detail,
                credential=credential,
            )

        self._update(change)

    def clear(self, deployment: str | None = None) -> None:
        self._update(lambda state: _clear(state, deployment))

    @abstractmethod
    def _load(self) -> _State:
        """The state for a read."""

    @abstractmethod
    def _update(self, change: Callable[[_State], _State | None]) -> _State:
        """Apply `change` (None: nothing changes) and return the state now in force."""


class MemoryStore(_Store):
    """Cooldowns for one process only: tests, and `simulate` without --state."""

    def __init__(self) -> None:
        self._state = _State(_new_salt(), {})

    def _load(self) -> _State:
        return self._state

    def _update(self, change: Callable[[_State], _State | None]) -> _State:
        self._state = change(self._state) or self._state
        return self._state


# --- The file -------------------------------------------------------------------------


class _BadFile(Exception):
    """The state file exists but cannot be used. `movable`: can be set aside and replaced."""

    def __init__(self, reason: str, *, movable: bool = True, state: str = "corrupt") -> None:
        super().__init__(reason)
        self.reason = reason
        self.movable = movable
        self.state = state  # how the warning describes the file


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _BadFile("a time is not a number")
    return float(value)


def _parse(data: bytes) -> _State:
    if not data.strip():
        raise _BadFile("empty")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _BadFile(f"not valid JSON, perhaps truncated: {exc}") from None
    if not isinstance(doc, dict):
        raise _BadFile("not a JSON object")
    if doc.get("version") != VERSION:
        raise _BadFile(f"version {doc.get('version')!r}, this support-ask reads version {VERSION}")
    salt, cooldowns = doc.get("salt"), doc.get("cooldowns")
    if not isinstance(salt, str) or not isinstance(cooldowns, dict):
        raise _BadFile("salt or cooldowns missing")
    try:
        bytes.fromhex(salt)
    except ValueError:
        raise _BadFile("the salt is not hex") from None
    entries: dict[str, Cooldown] = {}
    for name, raw in cooldowns.items():
        if not isinstance(raw, dict):
            raise _BadFile(f"the entry for {name!r} is not an object")
        kind, detail, credential = raw.get("kind"), raw.get("detail", ""), raw.get("credential")
        if not isinstance(kind, str) or kind not in _KINDS or not isinstance(detail, str):
            raise _BadFile(f"the entry for {name!r} has a bad kind or detail")
        if credential is not None and not isinstance(credential, str):
            raise _BadFile(f"the entry for {name!r} has a bad credential fingerprint")
        entries[name] = Cooldown(
            deployment=name,
            until=_number(raw.get("until")),
            kind=ErrorKind(kind),
            started=_number(raw.get("started")),
            detail=detail,
            credential=credential,
        )
    return _State(salt, entries)


def _dump(state: _State) -> bytes:
    doc = {
        "version": VERSION,
        "salt": state.salt or _new_salt(),
        "cooldowns": {
            name: {
                "until": c.until,
                "kind": str(c.kind),
                "started": c.started,
                "detail": c.detail,
                "credential": c.credential,
            }
            for name, c in sorted(state.entries.items())
        },
    }
    return (json.dumps(doc, indent=1) + "\n").encode()


if sys.platform == "win32":  # pragma: no cover - the CI runs on Linux

    def _lock(fd: int) -> None:
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

else:

    def _lock(fd: int) -> None:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor is closed


class FileStore(_Store):
    """Cooldowns in a versioned JSON file shared by every invocation.

    Reads take no lock: the file is only ever replaced whole (os.replace), so a reader sees
    the old or the new version, never half of one. Every change takes an exclusive lock on
    a file beside it (`<path>.lock`, never deleted: deleting a lock file races), re-reads
    under the lock, and writes a temporary file that replaces the state: concurrent
    invocations lose no update. A change that would change nothing writes nothing.

    No problem with the file reaches the caller: a bad file is reported through `warn`,
    set aside as `<path>.corrupt` and replaced; a file that cannot be written at all is
    reported once, and the cooldowns are kept in memory for the rest of the run.
    """

    def __init__(self, path: Path, *, warn: Warn | None = None) -> None:
        self.path = path
        self._warn_sink: Warn = warn or logging.getLogger("support_ask.state").warning
        self._warned: set[str] = set()
        self._memory: _State | None = None  # set once the file proved unwritable

    # -- reading

    def _read(self) -> _State:
        """The file as it is now; raises _BadFile, or OSError only for a missing file."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise
        except IsADirectoryError:
            raise _BadFile("it is a directory", movable=False) from None
        except OSError as exc:
            raise _BadFile(str(exc.strerror or exc), state="unreadable") from None
        return _parse(data)

    def _load(self) -> _State:
        """The state for a read. A bad file is recovered from here, so it is reported once
        and the next invocation finds a good file again."""
        if self._memory is not None:
            return self._memory
        try:
            return self._read()
        except FileNotFoundError:
            return _EMPTY
        except _BadFile as bad:
            return self._update(lambda state: None, known_bad=bad)

    # -- writing

    def _update(
        self, change: Callable[[_State], _State | None], *, known_bad: _BadFile | None = None
    ) -> _State:
        """Apply `change` under the lock and return the state now in force."""
        if self._memory is not None:
            self._memory = change(self._memory) or self._memory
            return self._memory
        state = _EMPTY
        if known_bad is None:
            # The lockless look first: most changes (clearing a deployment that is not
            # cooling down, re-cooling one already cooling longer) change nothing.
            seen: _State | None
            try:
                seen = self._read()
            except FileNotFoundError:
                seen = _EMPTY
            except _BadFile:
                seen = None  # recovered under the lock below
            if seen is not None:
                if change(seen) is None:
                    return seen
                state = seen
        try:
            with self._locked():
                state = self._read_locked()
                changed = change(state)
                if changed is not None:
                    self._write(changed)
                    state = changed
                return state
        except OSError as exc:
            # Nothing here can be written (read-only dir, full disk, a directory in the
            # way): keep going in memory rather than fail a question over a cache.
            self._memory = change(state) or state
            self._warn(
                f"cannot write the state file {self.path} ({exc.strerror or exc}); "
                "cooldowns are kept in memory for this run only"
            )
            return self._memory

    def _read_locked(self) -> _State:
        try:
            return self._read()
        except FileNotFoundError:
            return _EMPTY
        except _BadFile as bad:
            if not bad.movable:
                raise OSError(bad.reason) from None
            aside = self.path.with_name(self.path.name + ".corrupt")
            os.replace(self.path, aside)
            self._warn(
                f"state file {self.path} was {bad.state} ({bad.reason}); starting fresh — "
                f"the bad copy was kept as {aside}"
            )
            return _EMPTY

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock_path = self.path.with_name(self.path.name + ".lock")
        flags = os.O_RDWR | os.O_CREAT
        try:
            fd = os.open(lock_path, flags, 0o600)
        except FileNotFoundError:
            # First write on this machine: the private parent is created only now.
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock_path, flags, 0o600)
        try:
            _lock(fd)
            yield
        finally:
            os.close(fd)

    def _write(self, state: _State) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.fchmod(fd, 0o600)  # exactly 0600 whatever the umask
                data = memoryview(_dump(state))
                while data:
                    data = data[os.write(fd, data) :]
                # No fsync: the rename alone keeps every reader and every crash of this
                # process safe; only a power cut could lose the last change, and losing a
                # cooldown costs one extra call. fsync would multiply the write's cost.
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise

    def _warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn_sink(message)
