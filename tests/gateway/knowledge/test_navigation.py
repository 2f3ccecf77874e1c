"""Pages that are not answers (a book index, a table of contents, a site map): recognised
when they are read, kept between runs, weighed down in the prompt's selection, and never
what the help centre is said to cover a question with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.knowledge import indexfile
from gateway.knowledge.files import discover
from gateway.knowledge.index import MemoryIndex
from gateway.knowledge.load import parse
from gateway.knowledge.rank import rank
from gateway.knowledge.relevance import relevance
from gateway.knowledge.select import best_within
from gateway.knowledge.store import SqliteIndex
from gateway.model import Article, PageKind
from tests.support.formats import OWN_TERMS
from tests.support.helpcentre import age

VACUUM = (
    "<h2>Vacuuming</h2><p>PostgreSQL databases require periodic maintenance known as "
    "vacuuming. Run the VACUUM command on each table to recover disk space held by dead "
    "rows.</p><p>The autovacuum daemon runs it for you on a schedule.</p>"
)


def html(body: str, title: str = "Page") -> bytes:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def book_index() -> bytes:
    entries = "".join(
        f'<dt><a href="p{n}.html">vacuum_cost_{n} configuration parameter</a>, '
        f'<a href="p{n}.html#x">Cost-based Vacuum Delay</a></dt>'
        for n in range(40)
    )
    return html(f'<div class="index"><h1>Index</h1><dl>{entries}</dl></div>', "Index")


def kind(path: str, data: bytes) -> PageKind:
    article, problem = parse(path, data)
    assert article is not None, problem
    return article.kind


def test_a_book_index_named_so_by_its_markup_is_a_navigation_page() -> None:
    assert kind("bookindex.html", book_index()) is PageKind.NAVIGATION


def test_a_chapter_that_is_its_table_of_contents_is_navigation_one_with_content_is_not() -> None:
    toc = "".join(f'<dt><a href="s{n}.html">5.{n}. Section {n}</a></dt>' for n in range(20))
    chapter = f'<h1>Chapter 5</h1><div class="toc"><dl>{toc}</dl></div><p>About tables.</p>'
    assert kind("ddl.html", html(chapter)) is PageKind.NAVIGATION
    short_toc = '<div class="toc"><a href="#a">5.1. Basics</a></div>'
    assert kind("vacuum.html", html(short_toc + VACUUM)) is PageKind.ARTICLE


def test_a_list_of_links_without_markup_is_navigation_by_its_link_density() -> None:
    links = "".join(f'<li><a href="a{n}.html">Article about topic {n}</a></li>' for n in range(30))
    assert kind("sitemap.html", html(f"<h1>All articles</h1><ul>{links}</ul>")) is (
        PageKind.NAVIGATION
    )
    markdown = "# Site map\n\n" + "".join(f"- [Topic {n}](topic-{n}.md)\n" for n in range(30))
    assert kind("sitemap.md", markdown.encode()) is PageKind.NAVIGATION


def test_a_page_of_options_is_an_article_though_it_is_mostly_a_list() -> None:
    options = "".join(
        f"<dt>--option-{n}</dt><dd>Makes the command do thing {n}, "
        f'as <a href="other.html">git-other(1)</a> explains.</dd>'
        for n in range(30)
    )
    assert kind("git-thing.html", html(f"<h1>git-thing</h1><dl>{options}</dl>")) is (
        PageKind.ARTICLE
    )
    prose = "# Refunds\n\nWrite to [billing](mailto:b@acme.example) within 30 days to get it.\n"
    assert kind("refunds.md", prose.encode()) is PageKind.ARTICLE


def test_link_marks_never_reach_the_text_or_the_title() -> None:
    page = html('<h1><a id="x"></a>Backups</h1><p>See <a href="dump.html">pg_dump</a> now.</p>')
    article, _ = parse("backups.html", page)
    assert article is not None
    assert article.title == "Backups"
    assert "See pg_dump now." in article.text
    assert not any(mark in article.text for mark in "\x02\x03\x04")


def articles() -> list[Article]:
    pages = [("bookindex.html", book_index()), ("vacuum.html", html(VACUUM, "Routine Vacuuming"))]
    out = []
    for path, data in pages:
        article, _ = parse(path, data)
        assert article is not None
        out.append(article)
    return out


QUESTION = "How do I vacuum a table to get disk space back?"


def test_the_index_ranks_below_the_page_that_answers_and_never_covers_the_question() -> None:
    index = MemoryIndex(articles())
    best = rank(QUESTION, index)[0]
    assert best.key[0] == 1 and not best.navigation
    chosen = best_within(QUESTION, index, 10_000)
    assert chosen.sources[0].path == "vacuum.html"
    assert relevance(QUESTION, chosen.sources, index).path == "vacuum.html"
    only_index = best_within("cost-based delay configuration parameter", index, 10_000)
    assert {s.kind for s in only_index.sources} == {PageKind.NAVIGATION}
    assert (
        relevance("cost-based delay configuration parameter", only_index.sources, index).score == 0
    )


def write_pages(root: Path) -> None:
    root.mkdir()
    age(root / "bookindex.html", book_index().decode())
    age(root / "vacuum.html", html(VACUUM, "Routine Vacuuming").decode())


def test_the_kept_index_keeps_each_page_kind(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write_pages(root)
    path = indexfile.index_path(tmp_path / "cache", [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        index.refresh(discover([root])[0])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        index.refresh(discover([root])[0])
        kinds = {a.path: a.kind for a in index.articles()}
        assert kinds == {str(root / "bookindex.html"): PageKind.NAVIGATION,
                         str(root / "vacuum.html"): PageKind.ARTICLE}  # fmt: skip
        top = rank(QUESTION, index)[0]
        assert index.fetch([top.key])[0].path.endswith("vacuum.html")
        sources = best_within("cost-based delay configuration parameter", index, 10_000).sources
        assert sources and all(s.kind is PageKind.NAVIGATION for s in sources)


def test_an_index_of_the_previous_format_is_brought_up_to_date_in_place(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write_pages(root)
    path = indexfile.index_path(tmp_path / "cache", [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        index.refresh(discover([root])[0])
    # As the previous release left it: no kind column, format 3.
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX files_facts")
        db.execute("DELETE FROM meta WHERE key IN ('walked', 'arranged')")
        db.execute("ALTER TABLE files DROP COLUMN kind")
        for statement in OWN_TERMS:
            db.execute(statement)
        db.execute("UPDATE meta SET value = '3' WHERE key = 'format'")
    said: list[str] = []
    with SqliteIndex.open(path, [root], warn=said.append) as index:
        found = discover([root])[0]
        assert index.status().articles == 2  # its rows kept, not rebuilt
        assert index.refresh(found).read == 2  # every page read again, for its kind
        assert {a.kind for a in index.articles()} == {PageKind.NAVIGATION, PageKind.ARTICLE}
        assert index.refresh(found).read == 0
    assert said == []
    assert not Path(f"{path}.corrupt").exists()
