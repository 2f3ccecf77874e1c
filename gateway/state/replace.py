"""A small file shared by every process of one machine, changed safely: an exclusive lock on
a file beside it (`<path>.lock`, never deleted: deleting a lock file races), and each new
version written whole to a temporary file that replaces the old one (os.replace), so a
reader sees the old or the new version, never half of one. The cooldown state and the
limits' ledger are both kept this way."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - the CI runs on Linux

    def _lock(fd: int) -> None:
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

else:

    def _lock(fd: int) -> None:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor is closed


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of `path` (its private folder created on the first write)."""
    lock_path = path.with_name(path.name + ".lock")
    flags = os.O_RDWR | os.O_CREAT
    try:
        fd = os.open(lock_path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path, flags, 0o600)
    try:
        _lock(fd)
        yield
    finally:
        os.close(fd)


def replace_whole(path: Path, data: bytes) -> None:
    """Make `data` the whole of `path`, mode 0600 whatever the umask."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            # No fsync: the rename alone keeps every reader and every crash of this process
            # safe; only a power cut could lose the last change, and what these files hold
            # (cooldowns, seconds of bookings) costs one extra call to lose. fsync would
            # multiply the write's cost.
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
