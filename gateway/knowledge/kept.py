"""The walk a kept index was last made whole for, in its meta: what lets a question whose
walk finds every file as it was compare that walk once, not each file's row (`store`'s
freshness check, format 6 of `schema`).

The walk is kept, with the articles' ids in its order and the warnings for the files
skipped, only by an update that leaves no file to read again (none changed, none
unsettled), in the transaction that made the rows so; every other update forgets it. So
while it is kept, comparing a walk with it says what comparing every row would, and an
edit in place (another size or mtime) is a walk that differs.

A kept walk begins with what the walk was asked (`asked`: the patterns left out, the caps),
so an index can also be trusted without walking (`trusted`, for `articles.refresh:
on_index`) only for the settings it was made whole for: a page a new exclude pattern leaves
out is never served from an index made before it.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence

from gateway.knowledge.files import ArticleCaps, Found
from gateway.knowledge.sqlite import roll_back, sqlite3

# A file's row as a refresh compares it: id, path, size, mtime_ns, inode, problem.
Seen = tuple[int, str, int, int, int, str | None]
# The readable articles' ids in the order their files were found, and a warning per file
# skipped.
Arrangement = tuple[list[int], list[str]]
# meta's keys: the walk (`walked`), and its arrangement.
KEYS = ("walked", "arranged")


def asked(exclude: Sequence[str], limits: ArticleCaps) -> bytes:
    """What a walk is asked, as the bytes its kept walk begins with. Marshal's objects are
    self-delimiting, so no settings' bytes begin another's, and a walk kept before these
    began (a list) never begins with them (a tuple)."""
    caps = (limits.max_article_bytes, limits.max_set_bytes, limits.max_set_files)
    return marshal.dumps((tuple(exclude), caps), 2)


def walked(found: Sequence[Found], asked: bytes = b"") -> bytes:
    """What a walk asked `asked` found, as bytes to compare whole: each file's path, size,
    times and identity, in order (marshal's version 2 writes no back-references, which would
    depend on how the objects are shared: the same files give the same bytes in every
    process)."""
    return asked + marshal.dumps(list(map(tuple, found)), 2)


def arrangement(found: Sequence[Found], seen: Sequence[Seen]) -> Arrangement:
    """The articles of `found` as the rows `seen` hold them."""
    rows = {path: (fid, problem) for fid, path, _, _, _, problem in seen}
    ids: list[int] = []
    warnings: list[str] = []
    for file in found:
        fid, problem = rows.get(file.path, (None, None))
        if fid is None:
            continue
        if problem is not None:
            warnings.append(f"skipped {file.path}: {problem}")
            continue
        ids.append(fid)
    return ids, warnings


def read(db: sqlite3.Connection, walk: bytes) -> Arrangement | None:
    """The arrangement kept for `walk`, if it is the walk kept (one statement: both keys as
    one update left them)."""
    kept = dict(db.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", KEYS).fetchall())
    if kept.get(KEYS[0]) != walk:
        return None
    ids, warnings = marshal.loads(kept[KEYS[1]])
    return ids, warnings


def trusted(db: sqlite3.Connection, asked: bytes) -> Arrangement | None:
    """The arrangement kept for any walk asked `asked`, found by no walk now (one statement;
    the walk's bytes compared in SQLite, not read out)."""
    row = db.execute(
        "SELECT value FROM meta WHERE key = ? AND "
        "(SELECT substr(value, 1, ?) FROM meta WHERE key = ?) = ?",
        (KEYS[1], len(asked), KEYS[0], asked),
    ).fetchone()
    if row is None:
        return None
    ids, warnings = marshal.loads(row[0])
    return ids, warnings


def keep(db: sqlite3.Connection, walk: bytes, arranged: Arrangement | None) -> None:
    """Inside the caller's transaction: keep `walk` and `arranged`, or (None) forget any."""
    db.execute("DELETE FROM meta WHERE key IN (?, ?)", KEYS)
    if arranged is not None:
        db.execute(
            "INSERT INTO meta VALUES (?, ?), (?, ?)",
            (KEYS[0], walk, KEYS[1], marshal.dumps(arranged, 2)),
        )


def keep_now(db: sqlite3.Connection, keeping: Callable[[], None]) -> None:
    """`keeping` (a `keep`) in a transaction of its own, not waited for, and not at all where
    the index cannot be written: the next question compares every file instead."""
    (waits,) = db.execute("PRAGMA busy_timeout").fetchone()
    db.execute("PRAGMA busy_timeout = 0")
    try:
        db.execute("BEGIN IMMEDIATE")
        keeping()
        db.execute("COMMIT")
    except sqlite3.OperationalError:  # held by another process, or a read-only file
        roll_back(db)
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(waits)}")
