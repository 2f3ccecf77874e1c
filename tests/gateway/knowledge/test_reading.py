"""Reading a help centre's files for its index: both HTML parsers give the same article,
a pool of processes gives what one process does, and a missing lxml costs speed, not
the index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.knowledge.files import discover
from gateway.knowledge.htmltext import Page, standard, with_lxml
from gateway.knowledge.reading import LXML_PAGES, POOL_FILES, WORKER_ENDED, Reading
from gateway.knowledge.store import SqliteIndex
from tests.support.helpcentre import write_centre

# Pages whose reading depends on the details of a parser: implied ends, entities, regions
# named as navigation, links, code, preformatted text, dropped elements, a stated charset.
PAGES = {
    "lists": "<h1>Steps</h1><ol><li>Open <b>Settings</b><li><p>Click <i>Save</i></p></ol>"
    "<ul><li>one<li>two</ul><p>After.</p>",
    "entities": "<title>A &amp; B</title><p>caf&eacute; &nbsp;&rarr; &#8230; &lt;tag&gt;</p>",
    "navigation": "<h1>Index</h1><div class='toc'><ul><li><a href='a.html'>Alpha</a></li>"
    "<li><a href='b.html'>Beta page</a></li></ul></div><p>See <a href='c.html'>more</a>.</p>",
    "code": "<h1>Dump</h1><p>Run <code>pg_dump</code> first:</p><pre>$ pg_dump db &gt; out\n"
    "# a comment\n  indented</pre><p><code>only code</code></p>",
    "dropped": "<h1>T</h1><script>var a = '<p>no</p>';</script><style>p{}</style>"
    "<noscript>nothing</noscript><p>Kept <span class='x'>text</span>.</p><!-- a comment -->",
    "canonical": "<html><head><link rel='canonical' href='https://help.example.com/x'>"
    "<title>Named</title></head><body><p>Body only, no h1.</p></body></html>",
    "charset": "<meta charset='iso-8859-1'><h1>Größe</h1><p>Ünïcödé stays as decoded.</p>",
    "unclosed": "<h2>Part<p>First paragraph<p>Second <em>one</em><div>block</div>tail",
    "table": "<table><tr><th>Key</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>",
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_lxml_reads_a_page_as_the_standard_parser_does(name: str) -> None:
    assert with_lxml(PAGES[name]) == standard(PAGES[name])


def test_a_navigation_page_is_one_by_either_parser() -> None:
    _, _, _, kind = with_lxml(PAGES["navigation"])
    assert str(kind) == "navigation"


def many(root: Path, pages: int = POOL_FILES + 6) -> list[Path]:
    return write_centre(root, pages, sections=12)


def test_a_pool_of_processes_reads_what_one_process_does_in_the_same_order(
    tmp_path: Path,
) -> None:
    many(tmp_path / "kb")
    found = discover([tmp_path / "kb"])[0]
    pooled = list(Reading(with_lxml, workers=2).each(found))
    alone = list(Reading(standard, workers=1).each(found))
    assert [p.path for p in pooled] == [f.path for f in found]
    assert pooled == alone


def killed_on_page_9(text: str) -> Page:
    """lxml's reader, but a worker reading page 9 is ended by SIGKILL (a pool's worker:
    the test's own process never reads with it)."""
    if text.split("</h1>", 1)[0].endswith(" guide 9"):
        os.kill(os.getpid(), signal.SIGKILL)
    return with_lxml(text)


def test_a_pool_whose_worker_is_killed_reads_the_rest_here_and_says_so(tmp_path: Path) -> None:
    pages = many(tmp_path / "kb")
    assert pages[9].read_text().split("</h1>", 1)[0].endswith(" guide 9")  # the one that kills
    found = discover([tmp_path / "kb"])[0]
    said: list[str] = []
    pooled = list(Reading(killed_on_page_9, workers=2).each(found, said.append))
    alone = list(Reading(standard, workers=1).each(found))
    assert [p.path for p in pooled] == [f.path for f in found]  # each once, in order
    assert pooled == alone
    assert said == [WORKER_ENDED]


def test_a_first_index_of_many_pages_is_read_with_lxml_and_few_with_html_parser(
    tmp_path: Path,
) -> None:
    many(tmp_path / "kb", LXML_PAGES)
    found = discover([tmp_path / "kb"])[0]
    assert Reading.of(found).html is with_lxml
    assert Reading.of(found[: LXML_PAGES - 1]).html is standard


_PROBE = """
import sys
from pathlib import Path
{block}
from gateway.knowledge.files import discover
from gateway.knowledge.store import SqliteIndex
root = Path(sys.argv[1])
found = discover([root])[0]
with SqliteIndex.open(None, [root], warn=print) as index:
    index.refresh(found)
    print(index.size().articles, len(found))
    for warning in index.warnings:
        print(warning)
    print("lxml" in sys.modules)
"""


def _probe(root: Path, block: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(block=block), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_without_lxml_the_index_is_built_with_html_parser_and_says_how_to_fix_it(
    tmp_path: Path,
) -> None:
    many(tmp_path / "kb", LXML_PAGES + 2)
    out = _probe(tmp_path / "kb", "sys.modules['lxml'] = None  # an install without it")
    articles, found = out[0].split()
    assert articles == found
    assert out[1].startswith("lxml cannot be imported")
    assert "reinstall support-ask" in out[1]
    assert "standard library's parser" in out[1]


def test_a_refresh_of_a_few_changed_pages_does_not_import_lxml(tmp_path: Path) -> None:
    many(tmp_path / "kb", LXML_PAGES - 1)
    out = _probe(tmp_path / "kb", "")
    assert out[-1] == "False"


def test_the_index_built_in_a_pool_ranks_as_one_built_alone(tmp_path: Path) -> None:
    many(tmp_path / "kb")
    found = discover([tmp_path / "kb"])[0]
    indexes = []
    for reading in (Reading(with_lxml, workers=2), Reading(standard, workers=1)):
        index = SqliteIndex.open(None, [tmp_path / "kb"], warn=pytest.fail)
        index.reading = reading
        index.refresh(found)
        indexes.append(index)
    pooled, alone = (i.hits(["guide", "kaloru"]) for i in indexes)
    assert pooled == alone
    assert pooled.facts


def test_a_refresh_that_finds_nothing_changed_reads_nothing_and_imports_no_reader(
    tmp_path: Path,
) -> None:
    many(tmp_path / "kb", LXML_PAGES)
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from gateway.knowledge.files import discover\n"
        "from gateway.knowledge.store import SqliteIndex\n"
        "root, path = Path(sys.argv[1]), Path(sys.argv[2])\n"
        "with SqliteIndex.open(path, [root], warn=print) as index:\n"
        "    print(index.refresh(discover([root])[0]).read)\n"
        "readers = ('gateway.knowledge.reading', 'gateway.knowledge.htmltext', 'lxml')\n"
        "print(sorted(m for m in sys.modules if m.startswith(readers)))\n"
    )
    argv = [sys.executable, "-c", probe, str(tmp_path / "kb"), str(tmp_path / "index.sqlite")]
    first, again = (
        subprocess.run(argv, capture_output=True, text=True, timeout=120) for _ in range(2)
    )
    assert first.stdout.splitlines()[0] == str(LXML_PAGES), first.stderr
    assert again.stdout.splitlines() == ["0", "[]"], again.stderr


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_a_worker_watching_its_index_ends_once_the_index_has(pidfd: bool) -> None:
    """`_end_with`'s watch, in a process of its own: it leaves it running while the process
    it watches lives, and ends it with status 1 once that one has, with or without pidfds."""
    watched = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    no_pidfd = "" if pidfd else "del os.pidfd_open\n"
    probe = (
        f"import os, threading\n{no_pidfd}from gateway.knowledge.reading import _watch\n"
        f"threading.Thread(target=_watch, args=({watched.pid},)).start()\n"
        "print('watching', flush=True)\n"
        "print(input(), flush=True)\n"  # alive until told, unless the watch ended it
    )
    watcher = subprocess.Popen([sys.executable, "-c", probe], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert watcher.stdin is not None and watcher.stdout is not None
        assert watcher.stdout.readline() == "watching\n"
        watcher.stdin.write("still here\n")
        watcher.stdin.flush()
        # Answered after its watch began: the index alive, the worker was not ended.
        assert watcher.stdout.readline() == "still here\n"
        assert watched.stdin is not None
        watched.stdin.close()
        watched.wait(timeout=30)
        assert watcher.wait(timeout=30) == 1
    finally:
        for proc in (watched, watcher):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
