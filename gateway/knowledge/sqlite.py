"""The kept index's SQLite module (the standard library's C module, as `sqlite3` exports it), and
how a failed transaction is undone.

`sqlite3` is `_sqlite3` re-exported (`sqlite3.dbapi2`) with the DB-API's date and time
helpers, for which it imports datetime: about 7 M instructions of every question over a
kept index, which stores no date. The names are the same objects either way (an error
raised through one is caught as the other's), so `store`, `schema` and `cut` use this one.
"""

try:
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter without the C module's own name
    import sqlite3  # type: ignore[no-redef]

__all__ = ["roll_back", "sqlite3"]


def roll_back(db: sqlite3.Connection) -> None:
    """Undo the transaction a failure left open, if it left one. A Ctrl-C taken just after
    a COMMIT reaches its `except` with none open, and a ROLLBACK then raised an
    OperationalError that hid the Ctrl-C: a first index read it as a place where no index
    can be kept and went on in memory."""
    if db.in_transaction:
        db.execute("ROLLBACK")
