"""The docs' line width: no line of README.md or docs/*.md runs past WIDTH columns, the width
the code keeps (pyproject.toml's `line-length`) and the docs' prose already kept, so a page
reads whole in an editor or a terminal pager beside the code it describes.

Exempt: fenced code blocks (a command or an output is shown as it is typed or printed), a
table's rows (Markdown cannot wrap one), and a line that is one word after its indentation
and list marker, a code span's spaces not counted (a long URL, a JSON body in backticks:
a code span is kept whole, so it reads, and is found, as it is typed). `python3 scripts/docwidth.py
[FILE ...]` prints each line too wide and exits 1.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

WIDTH = 100
ROOT = Path(__file__).resolve().parent.parent
# What a line starts with that a break cannot go in: its indentation and a list's marker.
_LEAD = re.compile(r"\s*(?:[-*+]|\d+[.)])?\s*")
_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
_CODE = re.compile(r"(`+).+?\1")


def too_wide(text: str, width: int = WIDTH) -> Iterator[tuple[int, int]]:
    """Each line of the Markdown `text` wider than `width` that a wrap could mend: its
    number (from 1) and its width."""
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not line[opened.end() :].strip():
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        if len(line) <= width or line.lstrip().startswith("|"):
            continue
        start = _LEAD.match(line).end()  # type: ignore[union-attr]  # it matches empty
        spans = _CODE.sub(lambda code: code.group(0).replace(" ", "\0"), line)
        if " " in spans[start:].rstrip():
            yield number, len(line)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = 0
    for path in paths:
        for number, width in too_wide(path.read_text(encoding="utf-8")):
            name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            print(f"{name}:{number}: {width} columns, more than {WIDTH}: wrap it")
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
