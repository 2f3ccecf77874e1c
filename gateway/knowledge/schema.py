"""The index file's format: its schema, the format it is at, and bringing a file of
another format up to date (`gateway.knowledge.store` keeps the index in it).

An index of a format in `_MIGRATES` is brought up to date in place, in one transaction:
the user's index is kept (its files, passages and terms), and what the new format adds is
filled in by the migration or the refresh that follows every opening. An index of any
other format (or none: a new file) is made anew, and the refresh reads every file.

Every question over a kept index reads two things whose cost would otherwise grow with the
help centre: every file's identity (is it still as it was read?) and the set's totals
(BM25's average length, the budget's check). A file's row holds its article's whole text,
so scanning the table reads the set; `files_seen` holds only the identities (a scan of it
costs about a sixth of the table's over PostgreSQL's manual), and the totals are counted
once per update that changes the set (`keep_totals`), not once per question. A question
also reads the lengths and kinds of the articles it ranks: `files_facts` holds them, as
they sit behind the article's text in its row (SQLite reads every page of that text to reach
them). And the store keeps in meta what the walk found when the index was last made whole
(`kept`), so a question whose walk finds the same compares it once, not per file.
"""

from __future__ import annotations

from gateway.knowledge.sqlite import roll_back, sqlite3

# 3: each file keeps its article's stated public url; 4: and its page kind; 5: the set's
# totals kept in meta, and the files' identities in an index of their own; 6: the
# articles' lengths and kinds in an index of their own, and the walk kept in meta (an
# older version, which would change the files and leave the walk as it was, rebuilds a
# format it does not know); 7: the passages' terms in a table of their own, which the
# FTS5 index reads as its content (`passage_terms`).
FORMAT = "7"
# The formats an index is brought up to date from in place (`_migrate`); any other is
# rebuilt.
_MIGRATES = {"3", "4", "5", "6"}
# The set's totals, as `keep_totals` counts them: articles (readable files), their words
# and estimated tokens added up.
TOTALS = ("articles", "words", "tokens")

# The passages' terms (written out space-separated, `reading.Prepared.terms`) are kept in
# `passage_terms`, and FTS5 indexes them from there (an external content table) rather
# than keeping its own copy: a question reads the terms of the passages it ranks joined
# to their rows, where reading them through the FTS5 table costs a lookup of FTS5's own
# per row, about twice a plain table's (bench/RESULTS.md, "Index format 7").
_PASSAGE_TERMS = "CREATE TABLE passage_terms(id INTEGER PRIMARY KEY, heading TEXT, body TEXT)"
_TERMS = (
    "CREATE VIRTUAL TABLE terms USING fts5(heading, body, content='passage_terms', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0')"
)
_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE files(
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INT, mtime_ns INT, inode INT,
    problem TEXT, title TEXT, text TEXT, words INT, tokens INT, url TEXT, kind TEXT);
CREATE TABLE passages(
    id INTEGER PRIMARY KEY, file INT NOT NULL, number INT, heading TEXT, hstart INT,
    hend INT, start INT, "end" INT, words INT, first INT, tokens INT);
CREATE INDEX files_seen ON files(path, size, mtime_ns, inode, problem);
CREATE INDEX files_facts ON files(id, words, kind);
CREATE INDEX passages_file ON passages(file, number);
{_PASSAGE_TERMS};
{_TERMS};
CREATE VIRTUAL TABLE terms_vocab USING fts5vocab(terms, instance);
CREATE VIRTUAL TABLE terms_rows USING fts5vocab(terms, row);
CREATE VIRTUAL TABLE titles USING fts5(title, tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE titles_vocab USING fts5vocab(titles, instance);
CREATE VIRTUAL TABLE titles_rows USING fts5vocab(titles, row);
"""


def prepare(db: sqlite3.Connection) -> None:
    """Make `db` a current index: create it when empty, bring it up to date in place from a
    format of `_MIGRATES`, recreate it from any other.
    Raises sqlite3.DatabaseError when the file is not a database at all."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    if _current(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if _current(db):  # another process made it while we waited for the lock
            db.execute("COMMIT")
            return
        if _format(db) in _MIGRATES:
            _migrate(db)
            db.execute("COMMIT")
            return
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND sql LIKE 'CREATE VIRTUAL%'"
        ).fetchall():
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall():
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
        keep_totals(db)
        db.execute("COMMIT")
    except BaseException:
        roll_back(db)
        raise


def _format(db: sqlite3.Connection) -> str | None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    return None if row is None else str(row[0])


def keep_totals(db: sqlite3.Connection) -> None:
    """Count the set's `TOTALS` into meta, inside the caller's transaction: after every
    update that changed the set."""
    counted = db.execute(
        "SELECT count(*), coalesce(sum(words), 0), coalesce(sum(tokens), 0) FROM files "
        "WHERE problem IS NULL"
    ).fetchone()
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [(key, str(value)) for key, value in zip(TOTALS, counted, strict=True)],
    )


def totals(db: sqlite3.Connection) -> dict[str, int]:
    """The set's `TOTALS` as last counted (0 for one never counted)."""
    marks = ", ".join("?" for _ in TOTALS)
    kept = dict(db.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", TOTALS))
    return {key: int(kept.get(key, 0)) for key in TOTALS}


def _migrate(db: sqlite3.Connection) -> None:
    """Bring an index of a format of `_MIGRATES` to this format in place, inside the
    caller's transaction. From 3: a page's kind is read from its markup, which the index
    does not keep, so every file is marked unsettled (as one changed while it was read)
    and the refresh that follows every opening reads it again; until then it ranks as an
    article, as before. From 4: the identities' index made and the totals counted. From
    5: the facts' index made (the walk is kept by the next refresh). From 6: the
    passages' terms moved out of the FTS5 table into `passage_terms`, and indexed again
    from there (FTS5's 'rebuild': the terms are as they were, no file is read)."""
    was = _format(db)
    if was == "3":
        db.execute("ALTER TABLE files ADD COLUMN kind TEXT")
        db.execute("UPDATE files SET mtime_ns = -1")
    if was in {"3", "4", "5", "6"}:
        db.execute(_PASSAGE_TERMS)
        db.execute("INSERT INTO passage_terms SELECT rowid, heading, body FROM terms")
        db.execute("DROP TABLE terms")
        db.execute(_TERMS)
        db.execute("INSERT INTO terms(terms) VALUES ('rebuild')")
    db.execute(
        "CREATE INDEX IF NOT EXISTS files_seen ON files(path, size, mtime_ns, inode, problem)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS files_facts ON files(id, words, kind)")
    keep_totals(db)
    db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (FORMAT,))


def _current(db: sqlite3.Connection) -> bool:
    if _format(db) != FORMAT:
        return False
    # Reading the index proves the file whole enough to use (a damaged page raises here).
    db.execute("SELECT count(*) FROM terms_vocab WHERE term = ''").fetchone()
    return True
