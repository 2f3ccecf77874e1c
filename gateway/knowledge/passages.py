"""Articles cut into passages at their headings: what the ranker scores and the prompt sends.

A passage is part of one section (the text under one heading), at most `WORD_LIMIT` words
of whole paragraphs unless one paragraph alone is longer. Headings are Markdown's (`#`…
and setext underlines), HTML's (h1-h6 reach here as `#` lines, see `load`) and plain
text's short standalone lines. The heading that repeats the article's title counts as
none: the title is scored on its own. Each passage carries its heading; the prompt shows it.
"""

from __future__ import annotations

import re

from gateway.model import Article
from gateway.record import record
from prompts import WORD_LIMIT

Span = tuple[int, int]

_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")


class Fence:
    """A fenced code block's edges, as CommonMark has them: a line of three or more ` or ~
    opens one, and only a line of the same character, at least as long and nothing after
    it, closes it. Nothing inside one is a heading (`# and port 5432` in a shell comment)."""

    def __init__(self) -> None:
        self.open: str | None = None  # the opening run while inside a block

    def edge(self, line: str) -> bool:
        """Whether `line` opens or closes a block (and, if so, note it)."""
        if self.open is None:
            found = _FENCE.match(line)
            if found is None:
                return False
            self.open = found.group(1)
            return True
        closing = _CLOSE.match(line)
        if closing is None:
            return False
        run = closing.group(1)
        if run[0] != self.open[0] or len(run) < len(self.open):
            return False
        self.open = None
        return True

    @property
    def inside(self) -> bool:
        return self.open is not None


# The characters a line's first non-blank (within its first four) must be for `_ATX`,
# `_UNDERLINE` or `_FENCE` to match it.
_MARKED = frozenset("#=-`~")

ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)]|>)\s+")


@record
class Passage:
    """One passage of one article: spans into the article's text, and its size."""

    number: int  # its place in the article, from 0
    heading: str  # the section's heading ("" under the title)
    heading_span: Span | None  # where the heading line is in the article's text
    start: int  # where the body starts in the article's text
    end: int
    words: int
    first: bool  # the first passage of its section (the one that owns the heading)

    def body(self, article: Article) -> str:
        return article.text[self.start : self.end]


def _plain_heading(line: str) -> bool:
    """A short unpunctuated line standing alone, as plain-text articles write headings."""
    text = line.strip()
    return (
        text[:1].isupper()
        and len(text.split()) <= 8
        and text[-1] not in ".!?:;,"
        and not ITEM.match(line)
    )


class _Section:
    """One section as it is read: its heading, and its paragraphs' spans so far."""

    __slots__ = ("heading", "heading_span", "paragraphs")

    def __init__(self, heading: str, heading_span: Span | None, paragraphs: list[Span]) -> None:
        self.heading = heading
        self.heading_span = heading_span
        self.paragraphs = paragraphs


def _sections(article: Article) -> list[_Section]:
    """The article's sections: a heading's span and its paragraphs' spans in the text."""
    text = article.text
    title = article.title.strip().casefold()
    sections = [_Section("", None, [])]
    lines: list[Span] = []  # the current paragraph's lines
    fence = Fence()

    def start_section(span: Span) -> None:
        heading = _ATX.sub(r"\1", text[span[0] : span[1]]).split("\n")[0].strip()
        if heading.casefold() == title:
            sections.append(_Section("", None, []))
        else:
            sections.append(_Section(heading, span, []))

    def end_paragraph() -> None:
        if len(lines) == 1 and _plain_heading(text[lines[0][0] : lines[0][1]]):
            start_section(lines[0])
        elif lines:
            sections[-1].paragraphs.append((lines[0][0], lines[-1][1]))
        lines.clear()

    position = 0
    for line in text.split("\n"):
        span = (position, position + len(line))
        position = span[1] + 1
        if line[:4].lstrip(" ")[:1] not in _MARKED and not fence.inside:
            # No fence, heading or underline starts with any other character: a prose
            # line, tested without the three patterns (most lines of a large manual).
            if line.strip():
                lines.append(span)
            else:
                end_paragraph()
        elif fence.edge(line) or fence.inside:
            lines.append(span)
        elif _ATX.match(line):
            end_paragraph()
            start_section(span)
        elif _UNDERLINE.match(line):
            if len(lines) == 1:  # setext: the line above is a heading
                start_section((lines[0][0], span[1]))
                lines.clear()
            else:
                end_paragraph()  # a thematic break
        elif line.strip():
            lines.append(span)
        else:
            end_paragraph()
    end_paragraph()
    return [section for section in sections if section.paragraphs]


def split(article: Article) -> list[Passage]:
    """The article's passages, in order: each section's paragraphs up to the word limit."""
    text = article.text
    out: list[Passage] = []
    for section in _sections(article):
        groups: list[tuple[list[Span], int]] = [([], 0)]
        for start, end in section.paragraphs:
            size = len(text[start:end].split())
            group, words = groups[-1]
            if group and words + size > WORD_LIMIT:
                groups.append(([], 0))
                group, words = groups[-1]
            group.append((start, end))
            groups[-1] = (group, words + size)
        for number, (group, words) in enumerate(groups):
            out.append(
                Passage(
                    len(out),
                    section.heading,
                    section.heading_span,
                    group[0][0],
                    group[-1][1],
                    words,
                    first=number == 0,
                )
            )
    return out
