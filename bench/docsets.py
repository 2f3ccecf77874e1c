"""The documentation sets the help-centre benchmarks read, and the questions asked of them.

Full runs use real manuals that nobody on the team wrote, installed from Debian packages by
`bench/setup` (never by the tool): git's manual (git-doc) for the quality questions, and
PostgreSQL 15's (postgresql-doc-15, ~1,200 pages) for speed and memory. Smoke runs use
`examples/kb` and a generated HTML set, so CI needs no package.

Each set is copied into the run's scratch folder before it is measured: the index is keyed
by the articles' real paths, so a copy gives every run a cold cache of its own, and the
"touch one file" benchmark may change a file without touching the system's copy.

`python -m bench.docsets` checks what is installed, prints each set's pages and MB, and
verifies every question's evidence against its pages.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TypeVar

import yaml

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
EXAMPLES_KB = ROOT / "examples" / "kb"


SUFFIXES = (".html", ".htm", ".md", ".markdown", ".txt")
HTML = (".html", ".htm")
T = TypeVar("T")


@dataclass(frozen=True)
class DocSet:
    name: str
    package: str  # the Debian package that installs it ("" for a set in the repository)
    folder: Path
    suffixes: tuple[str, ...] = HTML  # the pages that make the set

    @property
    def installed(self) -> bool:
        return self.folder.is_dir() and any(
            p.suffix in self.suffixes for p in self.folder.rglob("*")
        )

    def missing(self) -> str:
        return f"{self.folder} is not there: run bench/setup (it installs {self.package})"


GIT_DOC = DocSet("git-doc", "git-doc", Path("/usr/share/doc/git-doc"))
PG_DOC = DocSet("postgresql-15", "postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html"))
KB = DocSet("examples/kb", "", EXAMPLES_KB, SUFFIXES)
QUESTIONS = {
    GIT_DOC.name: BENCH / "questions-git.yaml",
    PG_DOC.name: BENCH / "questions-pg.yaml",
    KB.name: BENCH / "questions-kb.yaml",
}


def pages(folder: Path, suffixes: tuple[str, ...] = HTML) -> list[Path]:
    """The pages under `folder` with one of `suffixes`, relative, in a stable order."""
    return sorted(
        p.relative_to(folder) for p in folder.rglob("*") if p.suffix in suffixes and p.is_file()
    )


def copy_pages(src: Path, dest: Path, suffixes: tuple[str, ...] = HTML) -> Size:
    """Copy the pages of `src` into `dest` (same relative paths); returns what was copied.
    git-doc ships each page twice (the .txt source beside the .html); only one is kept so
    the set reads like a help centre, one article per page."""
    size = Size(0, 0)
    for rel in pages(src, suffixes):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)
        size = size + Size(1, target.stat().st_size)
    return size


@dataclass(frozen=True)
class Size:
    files: int
    bytes: int

    def __add__(self, other: Size) -> Size:
        return Size(self.files + other.files, self.bytes + other.bytes)

    @property
    def mb(self) -> float:
        return self.bytes / 1e6

    def __str__(self) -> str:
        return f"{self.files:,} pages, {self.mb:.1f} MB"


def size_of(folder: Path) -> Size:
    files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    return Size(len(files), sum(p.stat().st_size for p in files))


class _Text(HTMLParser):
    """A page's visible text (script and style dropped): what the evidence is checked in,
    and what the baseline ranks. Written here rather than borrowed from the tool so the
    baseline and the check do not move when the tool's reader changes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


@dataclass(frozen=True)
class Page:
    path: str  # relative to its set's folder, "/"-separated
    title: str
    text: str


def read_page(folder: Path, rel: Path) -> Page:
    raw = (folder / rel).read_text(encoding="utf-8", errors="replace")
    if rel.suffix not in (".html", ".htm"):
        first = raw.lstrip().splitlines()[:1]
        return Page(rel.as_posix(), first[0].lstrip("# ") if first else rel.stem, raw)
    parser = _Text()
    parser.feed(raw)
    parser.close()
    title = " ".join(parser.title.split()) or rel.stem
    return Page(rel.as_posix(), title, html.unescape(" ".join(parser.parts)))


def read_pages(folder: Path, suffixes: tuple[str, ...] = SUFFIXES) -> list[Page]:
    return [read_page(folder, rel) for rel in pages(folder, suffixes)]


def normal(text: str) -> str:
    """Case and whitespace aside, and typographic quotes as typed."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    return re.sub(r"\s+", " ", text.replace("\u201d", '"')).strip().casefold()


@dataclass(frozen=True)
class Question:
    text: str
    answers: Mapping[str, str]  # page path -> evidence phrase in it


def halves(items: Sequence[T]) -> tuple[list[T], list[T]]:
    """A list of a question set (its answerable questions, its unanswerable ones, its
    follow-ups) split in two, the held-out half first: the first half (rounded down) was
    not looked at while a figure, a floor or a default was tuned on the other, so a
    benchmark reports its figures on it apart from the whole set's."""
    cut = len(items) // 2
    return list(items[:cut]), list(items[cut:])


def load_questions(path: Path) -> list[Question]:
    data = yaml.safe_load(path.read_text())
    return [Question(q["q"], dict(q["answers"])) for q in data["questions"]]


def check_evidence(questions: list[Question], by_path: Mapping[str, Page]) -> list[str]:
    """A problem per answering page that is missing or no longer holds its evidence."""
    problems = []
    for q in questions:
        for path, evidence in q.answers.items():
            page = by_path.get(path)
            if page is None:
                problems.append(f"{q.text!r}: no page {path}")
            elif normal(evidence) not in normal(page.text):
                problems.append(f"{q.text!r}: {path} does not say {evidence!r}")
    return problems


def checked_questions(docset: DocSet, folder: Path) -> list[Question]:
    """The set's questions, each checked against the pages copied to `folder`: a question
    whose evidence is no longer on its page would measure nothing."""
    from bench.procs import RunFailed

    questions = load_questions(QUESTIONS[docset.name])
    problems = check_evidence(questions, {p.path: p for p in read_pages(folder, docset.suffixes)})
    if problems:
        raise RunFailed("the questions no longer match the pages:\n" + "\n".join(problems))
    return questions


def _html_page(title: str, sections: Iterator[tuple[str, str]]) -> str:
    body = "".join(f"<h2>{html.escape(h)}</h2>\n<p>{html.escape(t)}</p>\n" for h, t in sections)
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def write_html_set(root: Path, total: int, seed: int = 11) -> Size:
    """A generated HTML help centre of about `total` bytes (pages of ~16 KB, a few h2
    sections each) for smoke runs, from the same seeded prose as bench.content."""
    import random

    from bench.content import _sentence

    rng = random.Random(seed)
    size = Size(0, 0)
    while size.bytes < total:
        n = size.files
        title = _sentence(rng)[:-1][:60]
        sections = (
            (_sentence(rng)[:-1][:50], " ".join(_sentence(rng) for _ in range(rng.randint(8, 30))))
            for _ in range(rng.randint(3, 8))
        )
        path = root / f"chapter-{n % 12:02d}" / f"page-{n:05d}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_html_page(title, sections))
        size = size + Size(1, path.stat().st_size)
    return size


def main() -> int:
    status = 0
    for docset in (GIT_DOC, PG_DOC):
        if not docset.installed:
            print(f"{docset.name}: not installed (bench/setup installs {docset.package})")
            status = 1
            continue
        html_pages = pages(docset.folder)
        mb = sum((docset.folder / p).stat().st_size for p in html_pages) / 1e6
        print(f"{docset.name}: {len(html_pages):,} HTML pages, {mb:.1f} MB in {docset.folder}")
    for docset in (GIT_DOC, PG_DOC, KB):
        qfile = QUESTIONS[docset.name]
        questions = load_questions(qfile)
        if not docset.installed:
            continue
        by_path = {p.path: p for p in read_pages(docset.folder, docset.suffixes)}
        problems = check_evidence(questions, by_path)
        answers = sum(len(q.answers) for q in questions)
        print(f"{qfile.name}: {len(questions)} questions, {answers} answering pages, "
              f"{'evidence checked' if not problems else f'{len(problems)} problems'}")  # fmt: skip
        for problem in problems:
            print(f"  {problem}")
        status = status or (1 if problems else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
