"""What the repository's comments cite, read from the source (nothing is imported).

A comment, docstring, script comment or fixture `source` may cite a page of the
repository (`docs/openai.md#openai-errors`, several anchors as `…#a, #b`) or a public
source (a docs site, an SDK file, `owner/repo#123`); never a development machine's path,
and never a document that lives outside the repository (a design or reference file, an
issue tracker's entry), which a reader of the repository cannot open.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.markdown import anchors
from tests.support.paths import REPO

# Where the citing text lives: Python, shell scripts, the provider fixtures' sources.
PYTHON_ROOTS = ("gateway", "cli", "prompts", "tests", "bench", "scripts")
SCRIPTS = ("scripts/check", ".ci/run", "bench/run", "bench/setup")
FIXTURES = "tests/support/fixtures"

OUTSIDE = (
    # a development machine's paths
    (re.compile(r"(?<![\w.~])/(?:work|root|home|Users)/"), "a machine's path"),
    # documents a reader of the repository cannot open
    (re.compile(r"design\.md|provider[- ]reference|\bshared/", re.I), "an outside document"),
    (re.compile(r"§|\bref(?:erence)? §?\d", re.I), "an outside document's section"),
    (re.compile(r"\bthe design(?:'s)?\b(?! of)|\(design[:)]|\bdesigned\b", re.I), "the design"),
    (re.compile(r"\bissue #?\d+\b|\bthe issue's\b|\b(?:in|per|see) the issue\b", re.I), "an issue"),
)

_CITES = re.compile("|".join(p.pattern for p, _ in OUTSIDE) + r"|docs/", re.I)

# A page under docs/ by its path, optionally with anchors: `…md#a`, `…md#a, #b and #c`.
DOC_CITE = re.compile(
    r"(?<![\w/.-])(docs/[\w./-]+?\.md)((?:#[\w-]+)(?:(?:,\s+|\s+and\s+)#[\w-]+)*)?"
)


@dataclass(frozen=True)
class Text:
    """One piece of citing text: where it is, and what it says."""

    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def python_texts(path: Path, source: str | None = None) -> Iterator[Text]:
    """Every comment and docstring of one Python file."""
    source = path.read_text() if source is None else source
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield Text(path, token.start[0], token.string)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield Text(path, node.body[0].lineno, docstring)


def script_texts(path: Path) -> Iterator[Text]:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.lstrip().startswith("#"):
            yield Text(path, number, line)


def fixture_texts(path: Path) -> Iterator[Text]:
    def sources(value: object) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "source" and isinstance(item, str):
                    yield item
                else:
                    yield from sources(item)
        elif isinstance(value, list):
            for item in value:
                yield from sources(item)

    for source in sources(json.loads(path.read_text())):
        yield Text(path, 0, source)


@functools.cache
def texts() -> tuple[Text, ...]:
    """All the citing text of the repository."""
    return tuple(_texts())


def _texts() -> Iterator[Text]:
    for root in PYTHON_ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            source = path.read_text()
            # Tokenizing is the slow part: a file that cites nothing of either kind is skipped.
            if ".venv" not in path.parts and _CITES.search(source):
                yield from python_texts(path, source)
    for name in SCRIPTS:
        if (REPO / name).is_file():
            yield from script_texts(REPO / name)
    for path in sorted((REPO / FIXTURES).rglob("*.json")):
        yield from fixture_texts(path)


def outside(text: str) -> list[str]:
    """What `text` cites that lies outside the repository, by kind."""
    return [what for pattern, what in OUTSIDE if pattern.search(text)]


def doc_citations(text: str) -> Iterator[tuple[str, str | None]]:
    """(page, anchor or None) for each page under docs/ cited in `text`."""
    for match in DOC_CITE.finditer(text):
        page, tail = match.group(1), match.group(2)
        if not tail:
            yield page, None
        for anchor in re.findall(r"#([\w-]+)", tail or ""):
            yield page, anchor


def broken(page: str, anchor: str | None, base: Path = REPO) -> str | None:
    """Why a citation of `page` (relative to `base`) and `anchor` leads nowhere; None if
    it leads somewhere."""
    target = (base / page).resolve()
    if not target.is_file():
        return f"{page} does not exist"
    if anchor is not None and target.suffix == ".md" and anchor not in anchors(target.read_text()):
        return f"{page} has no section #{anchor}"
    return None
