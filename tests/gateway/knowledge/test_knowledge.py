"""The help centre at scale: passages within a budget, the index kept between runs, and
the bad inputs a real folder holds."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli.runtime import wiring
from cli.runtime.failure import CliError
from gateway.config import ArticleSettings, Config, load_default_config
from gateway.knowledge import indexfile, store
from gateway.knowledge.centre import DIRECT_BYTES, open_centre
from gateway.knowledge.files import ArticleCaps, SetTooLarge, discover
from gateway.knowledge.index import MemoryIndex
from gateway.knowledge.load import load_articles
from gateway.knowledge.rank import rank
from gateway.knowledge.select import select
from gateway.knowledge.store import SqliteIndex
from gateway.model import Article, Status
from gateway.record import replace
from prompts import load_prompt, render
from tests.support.formats import OWN_TERMS
from tests.support.helpcentre import age, write_centre
from tests.support.paths import REPO

ROOT = REPO
KB = ROOT / "examples" / "kb"
QUESTION = "How do I get a refund for my annual plan?"
NEEDLE = "Write to billing@acme.example within 30 days of the charge to get your money back."
REFUND_PAGE = (
    "# Refunds for annual plans\n\nAnnual plans are paid up front.\n\n"
    f"## Asking for a refund\n\n{NEEDLE}\n\n## Invoices\n\nInvoices are emailed monthly.\n"
)


@pytest.fixture(scope="module")
def centre(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 HTML pages of filler (about 1.1 MB, so it is indexed), and one that answers."""
    root = tmp_path_factory.mktemp("centre")
    write_centre(root, 100)
    age(root / "part3" / "refunds.md", REFUND_PAGE)
    return root


def config(**articles: object) -> Config:
    base = load_default_config()
    return replace(base, articles=replace(ArticleSettings(), **articles))


def open_it(paths: list[Path], **kw: object) -> tuple[object, list[str]]:
    said: list[str] = []
    index = wiring.open_help_centre(paths, config(), whole=False, warn=said.append, **kw)
    return index, said


# -- selection ---------------------------------------------------------------------------


def test_the_answering_passage_of_a_big_help_centre_reaches_the_prompt(centre: Path) -> None:
    index, said = open_it([centre])
    assert said == []
    assert isinstance(index, SqliteIndex)  # over the direct-read size: indexed
    request = wiring.request_for(config(), QUESTION, index, budget=6000)
    assert NEEDLE in request.system
    first = request.sources[0]
    assert (first.title, first.path) == (
        "Refunds for annual plans",
        str(centre / "part3/refunds.md"),
    )
    assert "Article: Refunds for annual plans" in request.system
    # Each passage under the marker a citation of it is: [n] for the n-th sent.
    asking = next(n for n, s in enumerate(request.sources, 1) if s.heading == "Asking for a refund")
    assert f"[{asking}] ## Asking for a refund" in request.system
    # The budget holds: only passages sharing a word with the question, not 100 pages.
    assert sum(s.tokens for s in request.sources) <= 6000
    assert len(request.system) < 40_000
    # Passages of one article are sent together, in the article's order.
    numbers = [s.number for s in request.sources if s.path == first.path]
    assert numbers == sorted(numbers)
    index.close()


def test_an_articles_stated_url_survives_the_index(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_centre(root, 100)
    age(root / "refunds.md", "---\nurl: https://help.acme.example/refunds\n---\n" + REFUND_PAGE)
    for _ in range(2):  # built, then read back from the index kept on disk
        index, _ = open_it([root])
        assert isinstance(index, SqliteIndex)
        request = wiring.request_for(config(), QUESTION, index, budget=6000)
        index.close()
        assert request.sources[0].url == "https://help.acme.example/refunds"


def test_the_offline_deployment_answers_from_the_best_passage_sent(centre: Path) -> None:
    from gateway.config import Deployment
    from gateway.model import ProviderKind
    from gateway.providers.local import LocalProvider

    index, _ = open_it([centre])
    request = wiring.request_for(config(), QUESTION, index, budget=6000)
    assert request.articles == ()  # the whole set never travels with the request
    local = LocalProvider(Deployment("local", ProviderKind.LOCAL, 10**6))
    answer = local.complete(request, timeout=5).text
    cited = next(n for n, s in enumerate(request.sources, 1) if NEEDLE in s.text)
    assert answer.startswith("From \u201cRefunds for annual plans\u201d: ")
    assert f"{NEEDLE} " in answer and f"[{cited}]" in answer
    index.close()


def test_a_small_help_centre_is_sent_whole_exactly_as_before() -> None:
    articles, _ = load_articles([KB])
    index, said = open_it([KB])
    assert isinstance(index, MemoryIndex) and said == []
    request = wiring.request_for(config(), "How do I reset my password?", index, budget=6000)
    template = load_prompt(None)
    assert request.system == render(template, product="Acme Cloud", articles=articles)
    assert request.articles == articles
    assert [s.path for s in request.sources] == [a.path for a in articles]
    assert all(s.score is None and s.heading == "" for s in request.sources)


def test_a_budget_below_the_help_centre_sends_the_best_passages_of_it() -> None:
    index = MemoryIndex(load_articles([KB])[0])
    chosen = select("How do I reset my password?", index, 300)
    assert not chosen.whole
    assert 0 < chosen.tokens <= 300
    assert chosen.sources[0].title == "Resetting your password"
    assert all(s.score is not None for s in chosen.sources)


def test_a_long_page_repeating_the_question_does_not_crowd_out_the_one_answering_it() -> None:
    # The reference page repeats "tokens" and "expire" in every section; the FAQ answers
    # in its own words and ranks below all of them. The budget holds six sections.
    sections = "\n\n".join(
        f"## Token field {n}\n\nTokens expire: field {n} of the token record says when the "
        "tokens expire, and the tokens expire again after renewal." + " More detail." * 12
        for n in range(8)
    )
    reference = Article("API reference", "reference.md", "# API reference\n\n" + sections)
    faq = Article(
        "Staying signed in",
        "faq.md",
        "# Staying signed in\n\n## Why was I signed out?\n\nSessions end after 30 days: "
        "your tokens expire and you sign in again.",
    )
    index = MemoryIndex([reference, faq])
    ranking = rank("Why do my tokens expire?", index)
    assert [r.key[0] for r in ranking[:8]] == [0] * 8  # on score alone, the FAQ comes last
    budget = sum(r.tokens for r in ranking[:6])
    chosen = select("Why do my tokens expire?", index, budget)
    assert "faq.md" in [s.path for s in chosen.sources]
    assert chosen.sources[0].path == "reference.md"  # still the best article first
    assert chosen.tokens <= budget


def test_passages_that_score_alike_rank_in_the_help_centres_order() -> None:
    # Each article's three sections are the same words, so every passage of a copy scores
    # what the others do: ties go to the earlier article, then its earlier passage.
    sections = "\n\n".join(f"## Exports\n\nExport the report as CSV. Copy {n}." for n in "abc")
    copies = [Article(f"Guide {n}", f"guide-{n}.md", f"# Guide\n\n{sections}") for n in (1, 2)]
    ranking = rank("export the report", MemoryIndex(copies))
    assert len({round(r.score, 9) for r in ranking}) == 1
    assert [r.key for r in ranking] == sorted(r.key for r in ranking)
    assert ranking[0].key[0] == 0


def test_a_sections_heading_counts_once_in_its_article_however_many_passages_it_spans() -> None:
    # Both pages name backups once, in a heading; the first page's section spans two
    # passages. Counted once, the shorter page is the more about backups: counted per
    # passage, the heading would be two mentions and the longer page would win.
    sentence = "The nightly job copies the cluster files to the archive host."
    paragraph = " ".join([sentence] * 5)
    long = Article(
        "Operations", "ops.md", "# Operations\n\n## Backups\n\n" + "\n\n".join([paragraph] * 3)
    )
    short = Article(
        "Maintenance", "maint.md", "# Maintenance\n\n## Backups\n\n" + " ".join([sentence] * 6)
    )
    ranking = rank("backups", MemoryIndex([long, short]))
    assert len([r for r in ranking if r.key[0] == 0]) == 2
    assert ranking[0].key == (1, 0)


def test_all_sends_every_article_whole_whatever_the_size(centre: Path) -> None:
    said: list[str] = []
    index = wiring.open_help_centre([centre], config(), whole=True, warn=said.append)
    assert isinstance(index, MemoryIndex)
    request = wiring.request_for(config(), QUESTION, index, budget=None)
    assert len(request.articles) == 101
    assert NEEDLE in request.system


def test_the_kept_index_and_the_memory_index_rank_alike(centre: Path) -> None:
    index, _ = open_it([centre])
    memory = MemoryIndex(load_articles([centre])[0])
    for question in (QUESTION, "invoices emailed monthly", "kalomi guide 12", "tashi"):
        assert rank(question, index)[:20] == rank(question, memory)[:20], question
    index.close()


def test_a_shared_index_ranks_from_many_threads_as_from_one(centre: Path) -> None:
    """`batch` selects from worker threads against the index its main thread opened."""
    from concurrent.futures import ThreadPoolExecutor

    from gateway.knowledge.shared import Shared

    index, _ = open_it([centre])
    assert isinstance(index, SqliteIndex)
    questions = [QUESTION, "invoices emailed monthly", "kalomi guide 12", "tashi"] * 6
    alone = [select(q, index, 2000) for q in questions]
    shared = Shared(index)
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda q: select(q, shared, 2000), questions))
    assert together == alone
    shared.close()


# -- the index kept between runs ---------------------------------------------------------


def big(tmp_path: Path, pages: int = 30) -> Path:
    root = tmp_path / "kb"
    write_centre(root, pages)
    assert sum(f.size for f in discover([root])[0]) > DIRECT_BYTES
    return root


def fresh(index: SqliteIndex, root: Path) -> store.Refresh:
    return index.refresh(discover([root])[0])


def test_the_index_is_kept_in_the_user_cache_dir_and_reused(tmp_path: Path) -> None:
    root = big(tmp_path)
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "support-ask" / "index"
    index, _ = open_it([root])
    assert isinstance(index, SqliteIndex)
    assert Path(index.path).parent == cache
    index.close()
    again, _ = open_it([root])
    assert isinstance(again, SqliteIndex)
    assert fresh(again, root).read == 0  # nothing read a second time
    again.close()


def test_an_index_kept_before_is_found_by_the_same_name(tmp_path: Path) -> None:
    """The index's file is named by the SHA-256 of its roots' real paths: an index kept by
    an earlier version (which digested them with hashlib) is found, not built again."""
    root = big(tmp_path)
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:16]
    assert indexfile.index_path(tmp_path / "cache", [root]).name == f"{digest}.sqlite"


def test_a_changed_added_or_removed_file_is_reindexed_alone(tmp_path: Path) -> None:
    root = big(tmp_path)
    path = indexfile.index_path(tmp_path / "cache", [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        first = fresh(index, root)
        assert (first.read, first.removed) == (30, 0)
    page = root / "part1" / "page-00001.html"
    page.write_text(page.read_text().replace("</body>", "<p>Zebra crossings are ours.</p></body>"))
    age(page, seconds=30)
    age(root / "new.md", "# New\n\nA brand new article about flamingos.\n")
    (root / "part2" / "page-00002.html").unlink()
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        found = discover([root])[0]
        assert index.status(found).stale == 3
        second = index.refresh(found)
        assert (second.read, second.removed, second.unchanged) == (2, 1, 28)
        assert index.status(found).stale == 0
        assert index.fetch([rank("zebra crossings", index)[0].key])[0].path == str(page)
        assert rank("flamingos", index)
        assert index.size().articles == 30


def test_the_words_of_a_page_changed_or_removed_are_found_and_counted_no_more(
    tmp_path: Path,
) -> None:
    # FTS5 indexes the passages' terms from a table of their own (`schema._TERMS`): what a
    # refresh takes out of that table must leave its index too, or a word no page holds
    # would still count in the set's document frequencies and in FTS5's own ranking.
    root = big(tmp_path)
    age(root / "quokka.md", "# Quokkas\n\nThe quokka smiles at every visitor.\n")
    age(root / "wombat.md", "# Wombats\n\nA wombat digs long burrows.\n")
    path = indexfile.index_path(tmp_path / "cache", [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        fresh(index, root)
        assert index.hits(["quokka", "wombat", "burrow"]).df == {
            "quokka": 2,
            "wombat": 2,
            "burrow": 1,
        }
    age(root / "quokka.md", "# Visitors\n\nEvery visitor is welcome.\n", seconds=30)
    (root / "wombat.md").unlink()
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 1
        hits = index.hits(["quokka", "wombat", "burrow", "welcom"])
        assert {t: n for t, n in hits.df.items() if n} == {"welcom": 1}
        assert rank("quokka wombat", index) == []
    with sqlite3.connect(path) as db:  # the index as its content table has it
        db.execute("INSERT INTO terms(terms, rank) VALUES ('integrity-check', 1)")


def test_the_kept_totals_follow_the_set_as_it_changes(tmp_path: Path) -> None:
    # The budget's check and BM25's average length are kept with the index, not counted
    # per question: after each change they must be the set's as it is now.
    root = big(tmp_path)
    path = indexfile.index_path(tmp_path / "cache", [root])
    question = "How do I reset my password?"
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        fresh(index, root)
        assert index.size() == MemoryIndex(index.articles()).size()
    (root / "part2" / "page-00002.html").unlink()
    age(root / "new.md", "# Passwords\n\nTo reset your password, open Settings.\n" * 40)
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 1
        assert index.size() == MemoryIndex(index.articles()).size()
        kept = rank(question, index)
    with SqliteIndex.open(None, [root], warn=pytest.fail) as rebuilt:
        fresh(rebuilt, root)
        assert kept == rank(question, rebuilt)


def test_a_file_changed_within_the_same_tick_is_read_again(tmp_path: Path) -> None:
    # An edit right after indexing can keep the size and the mtime tick: a file modified
    # this recently is stored as unsettled and read again next time.
    root = big(tmp_path)
    path = indexfile.index_path(tmp_path / "cache", [root])
    edited = root / "part0" / "page-00000.html"
    then = edited.stat().st_mtime_ns
    os.utime(edited, ns=(then, then))
    settled = then - 10**9
    for other in discover([root])[0]:
        if other.path != str(edited):
            os.utime(other.path, ns=(settled, settled))
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        index.now_ns = lambda: then + 50_000_000  # read 50 ms after its last change
        assert fresh(index, root).read == 30
        assert fresh(index, root).read == 1
        index.now_ns = lambda: then + 150_000_000
        assert fresh(index, root).read == 1  # settled this time
        assert fresh(index, root).read == 0


def compares_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a refresh that compares the files one by one fail the test."""

    def seen(index: SqliteIndex) -> object:
        raise AssertionError("the files were compared one by one")

    monkeypatch.setattr(SqliteIndex, "_seen", seen)


def test_a_file_edited_in_place_is_seen_by_the_question_after_an_unchanged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/help-centre.md's promise, with the walk kept: a question whose walk finds every
    # file as it was compares it once; the next edit is still read.
    root = big(tmp_path)
    path = indexfile.index_path(tmp_path / "cache", [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 30
    with monkeypatch.context() as patched:
        compares_no_file(patched)
        with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
            unchanged = fresh(index, root)
            assert (unchanged.read, unchanged.unchanged) == (0, 30)
            assert not rank("zebra crossings", index)
    page = root / "part3" / "page-00003.html"
    age(page, page.read_text().replace("</body>", "<p>Zebra crossings are ours.</p></body>"))
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 1
        assert index.fetch([rank("zebra crossings", index)[0].key])[0].path == str(page)
    (root / "part4" / "page-00004.html").unlink()
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        gone = fresh(index, root)
        assert (gone.read, gone.removed, index.size().articles) == (0, 1, 29)
    question = "zebra crossings kalomi guide"
    with SqliteIndex.open(None, [root], warn=pytest.fail) as rebuilt:
        fresh(rebuilt, root)
        expected = [rebuilt.fetch([r.key])[0].path for r in rank(question, rebuilt)]
    compares_no_file(monkeypatch)
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 0
        assert [index.fetch([r.key])[0].path for r in rank(question, index)] == expected


def test_a_skipped_file_is_warned_about_on_every_question_with_the_walk_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big(tmp_path)
    age(root / "binary.md", "")
    (root / "binary.md").write_bytes(b"PK\x03\x04\x00\x00zip inside")
    age(root / "binary.md")
    warning = f"skipped {root / 'binary.md'}: not a text file (binary)"
    index, said = open_it([root])
    index.close()
    assert said == [warning]
    compares_no_file(monkeypatch)
    for _ in range(2):
        index, said = open_it([root])
        assert isinstance(index, SqliteIndex) and index.size().articles == 30
        index.close()
        assert said == [warning]


# What each earlier format lacked, undone from an index of today's format.
EARLIER_FORMATS = {
    # No totals kept, no index of the files' identities or of the articles' facts.
    4: (
        "DROP INDEX files_seen",
        "DROP INDEX files_facts",
        "DELETE FROM meta WHERE key IN ('walked', 'arranged', 'articles', 'words', 'tokens')",
        *OWN_TERMS,
    ),
    # No index of the articles' facts, no walk kept.
    5: (
        "DROP INDEX files_facts",
        "DELETE FROM meta WHERE key IN ('walked', 'arranged')",
        *OWN_TERMS,
    ),
    6: OWN_TERMS,
}


@pytest.mark.parametrize("earlier", EARLIER_FORMATS)
def test_an_index_of_an_earlier_format_is_kept_and_keeps_its_walk_without_reading_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: int
) -> None:
    root = big(tmp_path)
    path = indexfile.index_path(tmp_path / "cache", [root])
    question = "How do I reset my password?"
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        fresh(index, root)
        size, ranked = index.size(), rank(question, index)
    with sqlite3.connect(path) as db:
        for statement in EARLIER_FORMATS[earlier]:
            db.execute(statement)
        db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(earlier),))
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 0
        assert (index.size(), rank(question, index)) == (size, ranked)
    compares_no_file(monkeypatch)  # the walk the upgrade kept
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert fresh(index, root).read == 0
        assert (index.size(), rank(question, index)) == (size, ranked)


def test_a_corrupt_index_is_rebuilt_with_a_warning_and_the_question_answered(
    tmp_path: Path,
) -> None:
    root = big(tmp_path)
    age(root / "refunds.md", REFUND_PAGE)
    index, _ = open_it([root])
    assert isinstance(index, SqliteIndex)
    where = Path(index.path)
    index.close()
    where.write_bytes(b"this is not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{where}{suffix}").unlink(missing_ok=True)
    index, said = open_it([root])
    assert len(said) == 1 and "unusable" in said[0] and "rebuilding" in said[0]
    assert isinstance(index, SqliteIndex) and index.path == str(where)
    request = wiring.request_for(config(), QUESTION, index, budget=6000)
    assert NEEDLE in request.system
    index.close()


def test_an_unwritable_cache_dir_means_an_in_memory_index_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big(tmp_path)
    age(root / "refunds.md", REFUND_PAGE)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache dir should be")  # unwritable even for root
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    index, said = open_it([root])
    assert isinstance(index, SqliteIndex) and index.path == ":memory:"
    assert len(said) == 1 and "in memory for this run" in said[0]
    assert NEEDLE in wiring.request_for(config(), QUESTION, index, budget=6000).system


def capped_at(monkeypatch: pytest.MonkeyPatch, pages: int) -> None:
    """Every index file opened from now on holds at most `pages` pages (SQLite's
    `max_page_count`): past them its writes fail as on a full disk (SQLITE_FULL)."""
    connect = store._connect

    def capped(path: Path) -> sqlite3.Connection:
        db = connect(path)
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(store, "_connect", capped)


def test_a_disk_that_fills_during_a_first_index_means_an_in_memory_one_and_no_files_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its rolled-back writes filled the WAL file as far as the disk let them, and the
    question was an internal error."""
    root = big(tmp_path)
    age(root / "refunds.md", REFUND_PAGE)
    capped_at(monkeypatch, 40)  # room for the schema, not for the articles
    index, said = open_it([root])
    assert isinstance(index, SqliteIndex) and index.path == ":memory:"
    assert len(said) == 1, said
    assert "could not be written" in said[0] and "disk is full" in said[0], said
    assert "indexing in memory for this run" in said[0] and index.not_kept in said[0]
    assert NEEDLE in wiring.request_for(config(), QUESTION, index, budget=6000).system
    kept = Path(os.environ["XDG_CACHE_HOME"]) / "support-ask" / "index"
    assert list(kept.iterdir()) == []  # nothing kept, nothing left filling the disk


def test_a_disk_that_fills_during_a_refresh_keeps_the_index_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big(tmp_path)
    index, said = open_it([root])
    assert isinstance(index, SqliteIndex) and said == []
    where, before = Path(index.path), index.status()
    index.close()
    db = sqlite3.connect(where)
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    db.close()
    write_centre(root / "more", 30, seed=2)  # as much again to read
    age(root / "refunds.md", REFUND_PAGE)
    capped_at(monkeypatch, pages + 2)
    index, said = open_it([root])
    assert isinstance(index, SqliteIndex) and index.path == ":memory:"
    assert len(said) == 1 and "disk is full" in said[0], said
    assert NEEDLE in wiring.request_for(config(), QUESTION, index, budget=6000).system
    monkeypatch.undo()
    with SqliteIndex.open(where, [root], warn=pytest.fail) as kept:  # as it was, whole
        assert kept.status().articles == before.articles
        assert kept.status().passages == before.passages


def test_an_index_held_by_another_process_too_long_means_an_in_memory_one_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big(tmp_path)
    age(root / "refunds.md", REFUND_PAGE)
    refresh = SqliteIndex.refresh

    def held(index: SqliteIndex, *args: object, **kw: object) -> store.Refresh:
        if index.path != ":memory:":  # the file's, as when its BEGIN IMMEDIATE timed out
            raise store.IndexBusy("database is locked")
        return refresh(index, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteIndex, "refresh", held)
    index, said = open_it([root])
    assert isinstance(index, SqliteIndex) and index.path == ":memory:"
    assert index.not_kept is not None and "for over a minute" in index.not_kept
    assert len(said) == 1 and index.not_kept in said[0] and "in memory" in said[0]
    assert NEEDLE in wiring.request_for(config(), QUESTION, index, budget=6000).system
    kept = Path(os.environ["XDG_CACHE_HOME"]) / "support-ask" / "index"
    assert [p.suffix for p in kept.iterdir()] == [".sqlite"]  # another's to keep: not removed


class CtrlCAfter:
    """A connection to the index file that takes a Ctrl-C just after one statement of its
    creation has run (Python raises it between that statement and the next)."""

    def __init__(self, db: sqlite3.Connection, statement: str) -> None:
        self.db, self.statement = db, statement

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self.db.execute(sql, *args)
        if sql.strip().startswith(self.statement):
            self.statement = "\0"  # once
            raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


@pytest.mark.parametrize("statement", ["CREATE TABLE files", "COMMIT"])
def test_a_ctrl_c_while_the_index_file_is_made_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    """Taken just after the creating transaction's COMMIT, the Ctrl-C made its ROLLBACK
    fail ('no transaction is active'), an OperationalError that hid the Ctrl-C and was read
    as a place where no index can be kept: the run indexed in memory and went on."""
    root = big(tmp_path)
    connect = store._connect
    monkeypatch.setattr(store, "_connect", lambda path: CtrlCAfter(connect(path), statement))
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        wiring.open_help_centre([root], config(), whole=False, warn=said.append)
    assert said == []
    monkeypatch.setattr(store, "_connect", connect)
    index, said = open_it([root])  # the next run keeps its index there
    assert isinstance(index, SqliteIndex) and index.path != ":memory:" and said == []
    index.close()


@pytest.mark.slow
def test_three_processes_building_one_index_at_once_all_answer_and_share_it(
    tmp_path: Path,
) -> None:
    root = big(tmp_path, pages=40)
    age(root / "refunds.md", REFUND_PAGE)
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from cli.runtime import wiring
        from gateway.config import load_default_config
        from gateway.knowledge.store import SqliteIndex
        config = load_default_config()
        read = []
        index = wiring.open_help_centre(
            [Path({str(root)!r})], config, whole=False, warn=sys.stderr.write,
            progress=lambda p: read.append(p.files))
        assert isinstance(index, SqliteIndex), index
        request = wiring.request_for(config, {QUESTION!r}, index, budget=6000)
        print(max(read, default=0), {NEEDLE!r} in request.system)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert err == ""
    read = sorted(int(out.split()[0]) for out, _ in outputs)
    assert [out.split()[1] for out, _ in outputs] == ["True"] * 3
    assert read == [0, 0, 41]  # one built it; the others waited, then found nothing to do
    with SqliteIndex.open(
        indexfile.index_path(wiring.cache_dir(), [root]), [root], warn=pytest.fail
    ) as index:
        status = index.status(discover([root])[0])
        assert (status.articles, status.stale) == (41, 0)


# -- bad input ---------------------------------------------------------------------------


def test_symlinked_folders_are_followed_and_a_loop_is_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    (kb / "own").mkdir(parents=True)
    (kb / "own" / "a.md").write_text("# A\n\nOwn text.\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "b.md").write_text("# B\n\nShared text about flamingos.\n")
    (kb / "linked").symlink_to(shared, target_is_directory=True)
    (kb / "own" / "up").symlink_to(kb, target_is_directory=True)  # a loop
    articles, warnings = load_articles([kb])
    assert [a.title for a in articles] == ["B", "A"]  # linked/b.md, own/a.md
    assert warnings == [
        f"skipped {kb / 'own' / 'up'}: a symlink loop (it leads back to a folder above it)"
    ]


def test_an_article_over_the_size_cap_is_skipped_with_a_warning_naming_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "small.md").write_text("# Small\n\nFits.\n")
    huge = tmp_path / "huge.md"
    huge.write_text("# Huge\n\n" + "word " * 3000)
    articles, warnings = load_articles([tmp_path], ArticleCaps(max_article_bytes=10_000))
    assert [a.title for a in articles] == ["Small"]
    assert warnings == [
        f"skipped {huge}: 15,008 bytes, over the 10,000 bytes cap for one article "
        "(raise articles.max_article_bytes in the config to read it)"
    ]


def test_an_absurd_set_is_refused_before_any_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_centre(tmp_path / "kb", 30)
    opened: list[str] = []
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(str(self)) or b"")
    with pytest.raises(SetTooLarge, match=r"more than 20 files .*articles.max_set_files"):
        discover([tmp_path / "kb"], ArticleCaps(max_set_files=20))
    with pytest.raises(CliError) as refused:
        wiring.open_help_centre(
            [tmp_path / "kb"], config(max_set_bytes=50_000), whole=False, warn=pytest.fail
        )
    assert refused.value.code == 66
    assert "more than 50,000 bytes (the cap, articles.max_set_bytes)" in refused.value.message
    assert "raise the cap in the config" in refused.value.message
    assert opened == []


def test_binary_and_non_utf8_files_are_skipped_with_a_warning_in_an_index_too(
    tmp_path: Path,
) -> None:
    root = big(tmp_path)
    (root / "binary.md").write_bytes(b"PK\x03\x04\x00\x00zip inside")
    (root / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    for _ in range(2):  # warned on every question, not only when first read
        index, said = open_it([root])
        assert isinstance(index, SqliteIndex)
        assert sorted(said) == [
            f"skipped {root / 'binary.md'}: not a text file (binary)",
            f"skipped {root / 'latin1.md'}: not UTF-8; it looks like CP1252: convert it with "
            f"iconv -f CP1252 -t UTF-8 {root / 'latin1.md'} > {root / 'latin1.md.utf8'} && "
            f"mv {root / 'latin1.md.utf8'} {root / 'latin1.md'}",
        ]
        index.close()


def test_no_readable_article_in_an_indexed_set_exits_66(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    for number in range(40):
        (root / f"blob{number}.md").write_bytes(b"\x00" * 10_000)
    said: list[str] = []
    with pytest.raises(CliError) as failed:
        wiring.open_help_centre([root], config(), whole=False, warn=said.append)
    assert failed.value.code == 66 and "no readable article" in failed.value.message
    assert len(said) == 40


def test_a_python_without_fts5_reads_the_articles_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big(tmp_path)
    age(root / "refunds.md", REFUND_PAGE)
    monkeypatch.setattr(store, "has_fts5", lambda: False)
    said: list[str] = []
    index = open_centre(
        [root], limits=ArticleCaps(), cache_dir=wiring.cache_dir, whole=False, warn=said.append
    )
    assert isinstance(index, MemoryIndex)
    assert said == [
        "this Python's sqlite3 has no FTS5: reading every article this run instead of "
        "keeping an index"
    ]
    assert NEEDLE in wiring.request_for(config(), QUESTION, index, budget=6000).system


# -- compaction --------------------------------------------------------------------------


def test_a_deployment_with_a_small_window_gets_the_best_passages_that_fit_it() -> None:
    from gateway.clock import FixedRandom, VirtualClock
    from gateway.config import Deployment, Policy
    from gateway.engine.loop import Engine
    from gateway.model import ProviderKind
    from gateway.state.memory import MemoryStore
    from gateway.tokens import count_tokens
    from tests.support.fakes import ScriptedFactory, ScriptedProvider, answer

    small = Deployment("small", ProviderKind.OPENAI, 2_000, Policy(), "m", "OPENAI_API_KEY")
    settings = replace(config(), deployments=(small,), long_context=None)
    index = MemoryIndex(load_articles([KB])[0])
    prompts = wiring.prompting(settings, "How do I reset my password?", index, budget=6000)
    whole = prompts.request()
    assert len(whole.articles) == 12  # the help centre fits the budget: sent whole...
    provider = ScriptedProvider("small", [answer("Use Forgot password.")])
    clock = VirtualClock()
    engine = Engine(
        settings,
        providers=ScriptedFactory([provider]),
        store=MemoryStore(),
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ={"OPENAI_API_KEY": "sk-test"},
        count_tokens=count_tokens,
    )
    result = engine.ask(whole, compact=prompts)
    assert result.status is Status.ANSWERED
    sent = provider.requests[0]  # ...but not to a 2,000-token window: its best passages
    assert count_tokens(sent.system + "\n" + sent.question) <= 2_000 - 400
    assert "Send reset link" in sent.system
    assert result.articles[0].title == "Resetting your password"
    assert result.articles == sent.sources and all(s.score for s in sent.sources)
