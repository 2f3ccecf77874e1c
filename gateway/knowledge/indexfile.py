"""Where a help centre's index file lives in the user cache dir, and removing it.

One file per help centre, named by its roots' real paths, so every invocation over the same
folders finds the same index (`store` opens it; `index --clear` and a first index that
could not be written remove it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

try:
    # The interpreter's own SHA-256, the same digest: hashlib loads OpenSSL (about 11 M
    # instructions) for the one short digest every question over a kept index makes of its
    # paths (`index_path`). Python 3.11 names the module _sha256, 3.12 on _sha2.
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - a newer Python, or one built without it
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from hashlib import sha256


def index_folder(cache_dir: Path) -> Path:
    return cache_dir / "index"


def index_path(cache_dir: Path, roots: Sequence[Path]) -> Path:
    """Where the index of `roots` lives: named by their real paths, in the order given."""
    real = "\0".join(os.path.realpath(r) for r in roots)
    return index_folder(cache_dir) / f"{sha256(real.encode()).hexdigest()[:16]}.sqlite"


def clear(cache_dir: Path, roots: Sequence[Path] | None) -> list[Path]:
    """Remove the index of `roots` (None: every index); the files removed."""
    folder = index_folder(cache_dir)
    if roots is not None:
        base = index_path(cache_dir, roots)
        targets = [Path(f"{base}{s}") for s in ("", "-wal", "-shm", ".corrupt")]
    else:
        targets = sorted(folder.glob("*.sqlite*")) if folder.is_dir() else []
    removed = []
    for target in targets:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
            removed.append(target)
    return removed
