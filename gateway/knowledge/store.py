"""The index kept between runs: one SQLite file per help centre, in the user cache dir.

Why SQLite FTS5: it is in the standard library, one file, transactional (a crash or a
second writer never leaves half an update), WAL lets readers run beside a writer, and its
inverted index is built in C (about ten times faster to fill than a plain table of
postings). The terms are ours (`terms`, written out as space-separated words), and the
ranking is the one ranker's (`rank`); FTS5 finds the terms, counts the documents holding
each (the `fts5vocab` tables) and, in a large set, makes the first cut (`cut`) with its
own BM25. So a help centre ranks the same whether it is read this run (`MemoryIndex`) or
kept here, within the articles the cut keeps.

Freshness: each file's size, mtime and inode are kept; a refresh re-reads only the files
whose values differ, and drops the ones gone. What the walk found when the index was last
made whole for it is kept too (`kept`), so a walk that finds every file as it was (every
question's, mostly) is compared with it once, not file by file; under `articles.refresh:
on_index` a question walks nothing and takes that arrangement as it is (`trusted`), for
the settings it was kept for. A file changed less than a
timestamp tick before it was read is stored as unsettled and read again next time (an edit
within the same tick would otherwise keep every value). Concurrency: every update is one
`BEGIN IMMEDIATE` transaction; a second builder waits for the first, then finds nothing
left to do. Memory: one file is indexed at a time, and a first index of many files is
read a few files ahead, in a pool of processes (`reading`).

Failures never cost the answer: a corrupt file is moved aside and rebuilt (with a
warning); a cache dir that cannot be written gives an in-memory database for the run
(with a warning), and one whose disk fills during a refresh raises `IndexUnwritable`,
rolled back, for the caller to index in memory; a Python whose sqlite3 lacks FTS5 raises
`IndexUnavailable`, and the caller reads the articles into a `MemoryIndex` instead.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.knowledge import cut, kept, schema
from gateway.knowledge.files import Found
from gateway.knowledge.index import Hits, PassageFacts, PassageKey, SetSize
from gateway.knowledge.kept import Seen
from gateway.knowledge.sqlite import roll_back, sqlite3
from gateway.model import Article, PageKind, Source
from gateway.record import record

if TYPE_CHECKING:
    from gateway.knowledge.reading import Prepared, Reading

# A file changed this recently before it was read is read again next time: sub-second
# timestamps tick with the kernel's coarse clock (<= 10 ms); whole seconds mean a
# filesystem that keeps only those (FAT: 2 s).
_SETTLE_FINE_NS = 100_000_000
_SETTLE_COARSE_NS = 2_000_000_000
_OF_FILE = "SELECT id FROM passages WHERE file = ?"  # a file's passages, for `_forget`
_WAIT_S = 60.0  # how long to wait for another process's update before giving up on it
Warn = Callable[[str], None]
# A passage's facts made as the tuple they are: a NamedTuple's own constructor is a Python
# function, called once per passage hit (thousands a question over a large help centre).
_tuple = tuple.__new__


class IndexUnavailable(Exception):
    """No index can be kept with this Python (its sqlite3 has no FTS5)."""


class IndexBusy(Exception):
    """Another process held the index for longer than we wait."""


class IndexUnwritable(Exception):
    """A refresh's writes failed (a full disk: SQLite's FULL, IOERR), and were rolled back."""


_UNWRITABLE = (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)  # primary codes: an extended's low byte


@record
class RefreshProgress:
    """Where a refresh is: files and bytes done of those to read, and the current file."""

    files_done: int
    files: int
    bytes_done: int
    bytes: int
    current: str


@record
class Refresh:
    """What one refresh did."""

    read: int  # files read (added or changed)
    removed: int
    unchanged: int
    bytes_read: int
    seconds: float


@record
class IndexStatus:
    path: str  # the index file (":memory:" for an in-memory one)
    roots: tuple[str, ...]
    articles: int
    skipped: int
    passages: int
    tokens: int
    disk_bytes: int
    refreshed: float | None  # epoch seconds of the last update, None if never
    stale: int | None = None  # files that differ from the index now (None: not checked)


def has_fts5() -> bool:
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.Error:
        return False


class SqliteIndex:
    """An `Index` in one SQLite database. `open` it, `refresh` it to the files found now,
    then rank against it."""

    def __init__(self, db: sqlite3.Connection, path: str, roots: Sequence[Path]) -> None:
        self._db = db
        self.path = path
        self.roots = tuple(os.fspath(r) for r in roots)
        self._order: dict[int, int] = {}  # file id -> its article's place in the set
        self._ids: list[int] = []  # the reverse
        self._passage_ids: dict[PassageKey, int] = {}  # passages met in searches -> their row id
        self.warnings: list[str] = []  # the skipped files' reasons, as of the last refresh
        self.now_ns: Callable[[], int] = time.time_ns  # the wall clock, for settling (a seam)
        self.reading: Reading | None = None  # how files are read; None: `Reading.of` them
        self.cut: cut.Cut | None = cut.DEFAULT  # the first cut; None: rank every passage
        # Why an index meant to be kept is in memory for this run (None: it is kept, or was
        # asked for in memory): what `index` fails with, where the warning may be quiet.
        self.not_kept: str | None = None

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | None, roots: Sequence[Path], *, warn: Warn) -> SqliteIndex:
        """The index at `path` (None: in memory), created if need be.

        A file that is not a usable index is moved aside and a new one made, with a
        warning; a place where no file can be made gives an in-memory one, with a warning.
        """
        if not has_fts5():
            raise IndexUnavailable("this Python's sqlite3 has no FTS5")
        if path is None:
            return cls(_create(_memory()), ":memory:", roots)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            db = _connect(path)
        except (OSError, sqlite3.Error) as exc:
            return cls._in_memory(path, roots, warn, exc)
        try:
            _prepare_waiting(db)
        except sqlite3.DatabaseError as exc:
            db.close()
            # An OperationalError is the place's or another process's doing (read-only,
            # locked too long), never the file's: only a damaged file is set aside.
            if isinstance(exc, sqlite3.OperationalError):
                return cls._in_memory(path, roots, warn, exc)
            aside = path.with_name(path.name + ".corrupt")
            warn(f"the article index {path} was unusable ({exc}); rebuilding it")
            try:
                os.replace(path, aside)
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{path}{suffix}")
                db = _connect(path)
                schema.prepare(db)
            except (OSError, sqlite3.Error) as again:
                return cls._in_memory(path, roots, warn, again)
        return cls(db, os.fspath(path), roots)

    @classmethod
    def _in_memory(
        cls, path: Path, roots: Sequence[Path], warn: Warn, exc: BaseException
    ) -> SqliteIndex:
        reason = getattr(exc, "strerror", None) or str(exc)
        return cls.instead(
            f"cannot keep the article index in {path.parent} ({reason})",
            "make the folder writable, or set XDG_CACHE_HOME, to keep it",
            roots,
            warn,
        )

    @classmethod
    def instead(cls, why: str, fix: str, roots: Sequence[Path], warn: Warn) -> SqliteIndex:
        """An index in memory for this run, in place of the one that could not be kept
        (`why`), with a warning that says so and how to keep it (`fix`)."""
        warn(f"{why}; indexing in memory for this run ({fix})")
        index = cls(_create(_memory()), ":memory:", roots)
        index.not_kept = why
        return index

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- refreshing ------------------------------------------------------------------

    def _seen(self) -> list[Seen]:
        """Every file's row id, path, identity and problem (from `schema`'s narrow index)."""
        return self._db.execute(
            "SELECT id, path, size, mtime_ns, inode, problem FROM files"
        ).fetchall()

    def stale(
        self,
        found: Sequence[Found],
        seen: Sequence[Seen] | None = None,
    ) -> tuple[list[Found], list[int]]:
        """The files to read again (new or changed) and the ids of those gone (`seen`: the
        files' rows as `_seen` read them, else read now)."""
        known = {row[1]: row for row in (self._seen() if seen is None else seen)}
        changed = []
        for file in found:
            row = known.pop(file.path, None)
            if row is None or row[2:5] != (file.size, file.mtime_ns, file.inode):
                changed.append(file)
        return changed, [row[0] for row in known.values()]

    def trusted(self, asked: bytes) -> bool:
        """Arrange the articles as the index was last made whole for a walk asked `asked`
        (`kept.asked`), walking nothing: False where it was not (the caller walks then)."""
        arranged = kept.trusted(self._db, asked)
        if arranged is not None:
            self._arrange(*arranged)
        return arranged is not None

    def refresh(
        self,
        found: Sequence[Found],
        *,
        progress: Callable[[RefreshProgress], None] | None = None,
        asked: bytes = b"",
    ) -> Refresh:
        """Bring the index up to the files `found` now by a walk asked `asked`
        (`kept.asked`): read the new and changed ones, drop the gone ones. Raises
        `IndexBusy` if another process holds it too long."""
        started = time.monotonic()
        walk = kept.walked(found, asked)
        arranged = kept.read(self._db, walk)
        if arranged is not None:  # every file as it was when the index was last made whole
            self._arrange(*arranged)
            return Refresh(0, 0, len(found), 0, time.monotonic() - started)
        seen = self._seen()
        changed, gone = self.stale(found, seen)
        done_bytes = 0
        notes: list[str] = []
        if changed or gone:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise IndexBusy(str(exc)) from None
            try:
                # Another process may have done (some of) it while we waited for the lock.
                changed, gone = self.stale(found)
                for fid in gone:
                    self._forget(fid)
                total = sum(f.size for f in changed)
                # Imported when a file is to be read: a refresh that finds none is the
                # common path of every question over a kept index.
                from gateway.knowledge.reading import Reading

                reading = self.reading or Reading.of(changed)
                if reading.warning is not None:
                    notes.append(reading.warning)
                for number, (file, prepared) in enumerate(
                    zip(changed, reading.each(changed, notes.append), strict=True)
                ):
                    if progress is not None:
                        progress(
                            RefreshProgress(number, len(changed), done_bytes, total, file.path)
                        )
                    self._store(file, prepared)
                    done_bytes += file.size
                if progress is not None and changed:
                    progress(RefreshProgress(len(changed), len(changed), done_bytes, total, ""))
                self._db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('refreshed', ?), ('roots', ?)",
                    (str(time.time()), "\0".join(self.roots)),
                )
                schema.keep_totals(self._db)
                seen = self._seen()
                self._keep(found, seen, walk)
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                roll_back(self._db)
                if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _UNWRITABLE:
                    raise IndexUnwritable(f"{self.path}: {exc}") from None
                raise
            except BaseException:
                roll_back(self._db)
                raise
        else:
            self._keep_now(found, walk)
        self._arrange(*kept.arrangement(found, seen))
        self.warnings += notes
        return Refresh(
            len(changed),
            len(gone),
            len(found) - len(changed),
            done_bytes,
            time.monotonic() - started,
        )

    def _forget(self, fid: int) -> None:
        db = self._db
        # Out of FTS5's index first: it finds the postings in the table it read (`schema`).
        for table, key in (("terms", "rowid"), ("passage_terms", "id")):
            db.execute(f"DELETE FROM {table} WHERE {key} IN ({_OF_FILE})", (fid,))
        db.execute("DELETE FROM passages WHERE file = ?", (fid,))
        db.execute("DELETE FROM titles WHERE rowid = ?", (fid,))
        db.execute("DELETE FROM files WHERE id = ?", (fid,))

    def _store(self, file: Found, prepared: Prepared) -> None:
        db = self._db
        row = db.execute("SELECT id FROM files WHERE path = ?", (file.path,)).fetchone()
        if row is not None:
            self._forget(row[0])
        article = prepared.article
        # Unsettled: changed within a tick of now, so a next edit could keep every value.
        coarse = file.mtime_ns % 1_000_000_000 == 0
        settle = _SETTLE_COARSE_NS if coarse else _SETTLE_FINE_NS
        settled = self.now_ns() - file.mtime_ns >= settle
        mtime = file.mtime_ns if settled else -1
        if article is None:
            db.execute(
                "INSERT INTO files(path, size, mtime_ns, inode, problem) VALUES (?, ?, ?, ?, ?)",
                (file.path, file.size, mtime, file.inode, prepared.problem),
            )
            return
        cursor = db.execute(
            "INSERT INTO files(path, size, mtime_ns, inode, title, text, words, tokens, url, "
            "kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                file.path,
                file.size,
                mtime,
                file.inode,
                article.title,
                article.text,
                prepared.words,
                prepared.tokens,
                article.url,
                str(article.kind),
            ),
        )
        fid = cursor.lastrowid
        db.execute("INSERT INTO titles(rowid, title) VALUES (?, ?)", (fid, prepared.title_terms))
        # The ids given as SQLite would (one past the largest): three statements, not three
        # per passage (an INSERT ... SELECT into `terms` took twice a second insert's CPU).
        (first,) = db.execute("SELECT coalesce(max(id), 0) + 1 FROM passages").fetchone()
        db.executemany(
            'INSERT INTO passages(id, file, number, heading, hstart, hend, start, "end", words,'
            " first, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(pid, fid, *row) for pid, row in enumerate(prepared.passages, first)],
        )
        terms = [(pid, *row) for pid, row in enumerate(prepared.terms, first)]
        db.executemany("INSERT INTO passage_terms(id, heading, body) VALUES (?, ?, ?)", terms)
        db.executemany("INSERT INTO terms(rowid, heading, body) VALUES (?, ?, ?)", terms)

    def _arrange(self, ids: list[int], warnings: list[str]) -> None:
        """Number the articles `ids` in their order (`kept.arrangement`'s)."""
        self._ids, self.warnings = ids, warnings
        self._order = dict(zip(ids, range(len(ids)), strict=True))
        self._passage_ids = {}

    # -- the walk kept (`kept`) -------------------------------------------------------

    def _keep(self, found: Sequence[Found], seen: Sequence[Seen], walk: bytes) -> None:
        """Inside the caller's transaction, with `seen` read in it: keep the walk when no
        file is to be read again, else forget the one kept."""
        changed, gone = self.stale(found, seen)
        kept.keep(self._db, walk, None if changed or gone else kept.arrangement(found, seen))

    def _keep_now(self, found: Sequence[Found], walk: bytes) -> None:
        """`_keep` for a walk that found nothing to read but is not the one kept (an index of
        an earlier format, or made whole for another walk)."""
        kept.keep_now(self._db, lambda: self._keep(found, self._seen(), walk))

    # -- the Index protocol ----------------------------------------------------------

    def size(self) -> SetSize:
        return SetSize(len(self._ids), schema.totals(self._db)["tokens"])

    def hits(self, words: Sequence[str], budget: int | None = None) -> Hits:
        """The counts of `words` in the articles the first cut chooses (`cut`, grown for
        a prompt of `budget` tokens): every one when the set has no more than it takes."""
        db = self._db
        marks = ", ".join("?" for _ in words)
        (passages,) = db.execute("SELECT count(*) FROM passages").fetchone()
        totals = schema.totals(db)
        average = totals["words"] / totals["articles"] if totals["words"] else 1.0
        found = Hits(passages + len(self._ids), len(self._ids), average)
        # Document frequencies from the vocabularies' own counts: passages, then titles.
        for vocab in ("terms_rows", "titles_rows"):
            for term, docs in db.execute(
                f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", list(words)
            ):
                found.df[term] += docs
        first = None if self.cut is None else self.cut.within(budget)
        if first is None or len(self._ids) <= first.articles:
            files = list(self._ids)
        else:
            files = first.candidates(db, first.searched(found.df, found.units), words)
        order, facts, ids = self._order, found.facts, self._passage_ids
        wanted = cut.needles(words)
        titled: set[int] = set()
        for fid, title in _chunks(db, "SELECT rowid, title FROM titles WHERE rowid IN ({})", files):
            held = cut.counts(title, wanted)
            if held and fid in order:
                found.title[order[fid]] = held
                titled.add(fid)
        hit_files: set[int] = set()
        headings: dict[str, dict[str, int]] = {}
        for pid, fid, number, size, first, tokens, heading, body in _chunks(
            db,
            "SELECT p.id, p.file, p.number, p.words, p.first, p.tokens, c.heading, c.body "
            "FROM terms t JOIN passages p ON p.id = t.rowid JOIN passage_terms c ON c.id = p.id "
            "WHERE terms MATCH ? AND p.file IN ({})",
            files,
            before=(cut.match(words),),
        ):
            article = order.get(fid)
            if article is None:
                continue
            key = (article, number)
            if in_body := cut.counts(body, wanted):
                found.body[key] = in_body
            # A section's passages share its heading: counted once per question.
            in_heading = headings.get(heading)
            if in_heading is None:
                in_heading = headings[heading] = cut.counts(heading, wanted)
            if in_heading:
                found.heading[key] = in_heading
            facts[key] = _tuple(PassageFacts, (size, bool(first), tokens))
            ids[key] = pid
            hit_files.add(fid)
        # A title's words are in every passage of its article: each is a candidate.
        for pid, fid, number, size, first, tokens in _chunks(
            db,
            "SELECT id, file, number, words, first, tokens FROM passages WHERE file IN ({})",
            sorted(titled),
        ):
            key = (order[fid], number)
            if key not in facts:
                facts[key] = _tuple(PassageFacts, (size, bool(first), tokens))
                ids[key] = pid
        # From `files_facts`: a row's words and kind sit behind its article's text.
        for fid, length, kind in _chunks(
            db,
            "SELECT id, words, kind FROM files INDEXED BY files_facts WHERE id IN ({})",
            sorted(hit_files | titled),
        ):
            found.lengths[order[fid]] = length
            if kind == PageKind.NAVIGATION:
                found.navigation.add(order[fid])
        return found

    def fetch(self, keys: Sequence[PassageKey]) -> list[Source]:
        missing = [k for k in keys if k not in self._passage_ids]
        for article, number in missing:  # keys not met in a search: looked up one by one
            row = self._db.execute(
                "SELECT id FROM passages WHERE file = ? AND number = ?",
                (self._ids[article], number),
            ).fetchone()
            if row is not None:
                self._passage_ids[(article, number)] = row[0]
        rows = {
            pid: rest
            for pid, *rest in _chunks(
                self._db,
                'SELECT p.id, f.path, f.title, p.heading, substr(f.text, p.start + 1, p."end" - '
                "p.start), p.tokens, f.url, f.kind FROM passages p JOIN files f ON f.id = p.file "
                "WHERE p.id IN ({})",
                [self._passage_ids[k] for k in keys],
            )
        }
        out = []
        for article, number in keys:
            path, title, heading, text, tokens, url, kind = rows[
                self._passage_ids[(article, number)]
            ]
            out.append(
                Source(
                    path, title, heading, text, tokens, article, number, url=url, kind=_kind(kind)
                )
            )
        return out

    def articles(self) -> tuple[Article, ...]:
        out = []
        for fid in self._ids:
            title, path, text, url, kind = self._db.execute(
                "SELECT title, path, text, url, kind FROM files WHERE id = ?", (fid,)
            ).fetchone()
            out.append(Article(title=title, path=path, text=text, url=url, kind=_kind(kind)))
        return tuple(out)

    # -- status ----------------------------------------------------------------------

    def status(self, found: Sequence[Found] | None = None) -> IndexStatus:
        db = self._db
        articles, skipped, tokens = db.execute(
            "SELECT count(*) FILTER (WHERE problem IS NULL), count(*) FILTER (WHERE problem IS "
            "NOT NULL), coalesce(sum(tokens), 0) FROM files"
        ).fetchone()
        passages = db.execute("SELECT count(*) FROM passages").fetchone()[0]
        meta = dict(db.execute("SELECT key, value FROM meta"))
        refreshed = float(meta["refreshed"]) if "refreshed" in meta else None
        disk = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal"):
                with contextlib.suppress(OSError):
                    disk += os.stat(self.path + suffix).st_size
        stale = None
        if found is not None:
            changed, gone = self.stale(found)
            stale = len(changed) + len(gone)
        roots = tuple(meta.get("roots", "").split("\0")) if meta.get("roots") else self.roots
        return IndexStatus(
            self.path, roots, articles, skipped, passages, tokens, disk, refreshed, stale
        )


def _kind(stored: str | None) -> PageKind:
    return PageKind(stored) if stored else PageKind.ARTICLE


def _chunks(
    db: sqlite3.Connection, sql: str, ids: Sequence[int], before: Sequence[object] = ()
) -> list[Any]:
    """`sql`'s rows for every id, asked in chunks below SQLite's limit on parameters
    (`before`: the parameters that come first, in every chunk)."""
    out: list[Any] = []
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        out += db.execute(sql.format(", ".join("?" for _ in part)), [*before, *part]).fetchall()
    return out


def _connect(path: Path) -> sqlite3.Connection:
    # Autocommit mode (isolation_level None): transactions are begun explicitly, IMMEDIATE.
    # Not tied to the opening thread: `batch` ranks from its workers, one at a time
    # (`shared.Shared`).
    db = sqlite3.connect(path, timeout=_WAIT_S, isolation_level=None, check_same_thread=False)
    return db


def _memory() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)


def _prepare_waiting(db: sqlite3.Connection) -> None:
    """`_prepare`, waiting for another process that holds the file: switching a new file
    to WAL takes a lock that SQLite's busy timeout does not wait for."""
    for attempt in range(50):
        try:
            schema.prepare(db)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or attempt == 49:
                raise
            time.sleep(0.1)


def _create(db: sqlite3.Connection) -> sqlite3.Connection:
    db.isolation_level = None
    schema.prepare(db)
    return db
