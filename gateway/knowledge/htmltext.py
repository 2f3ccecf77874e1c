"""An HTML page reduced to text: its visible text, title, canonical link and page kind.

One sink (`HtmlText`) turns a page's events (an element starts or ends, text) into the
article's text; two tokenizers feed it, chosen by the caller (a `Reader`):

- `standard`, the standard library's `html.parser`: nothing to install, cheap to import
  (a question over a small help centre read this run imports it, and only it), but
  pure Python, about three quarters of the time a first index of a large set takes;
- `with_lxml`, libxml2's HTML parser through lxml's parser-target interface: the same events
  from C, several times faster, for the index of a large set (`store`), where its import
  (about 30 ms) is paid once for hundreds of pages. Chosen over selectolax (lexbor),
  which only builds a tree, so every node would be walked in Python again: measured by
  `bench/run parsers` (bench/RESULTS.md), which also checks that both give the same
  passages, but for whitespace, over git's and PostgreSQL's manuals.

Inline elements change nothing in the text; links and `<code>` leave marks (`_LINK`,
`_LINK_END`, `_CODE`) in it, which the sink counts and removes. For `html.parser` their
tags are cut out by regular expressions before parsing (it costs per tag: a typical page
reads ~1.5x faster); lxml reports them as events, and the sink makes the same marks. The
sink is lxml's parser target itself (one Python call per event); libxml2 also reports
the ends of the elements it closed by itself (an `<li>` before the next one), which the
sink reads as the next start would have been read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gateway.knowledge.shape import kind_of, names_navigation
from gateway.model import PageKind

if TYPE_CHECKING:
    from html.parser import HTMLParser


Page = tuple[str, str, str | None, PageKind]
"""A page read: its title, its text, its canonical link (or None), its kind."""
Reader = Callable[[str], Page]
"""A tokenizer and the sink: `standard` or `with_lxml`."""
Attributes = Mapping[str, str | None]


class ParserMissing(Exception):
    """lxml cannot be imported: the installation is incomplete."""


# Elements whose text is never content.
_DROP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
# Inline elements: they change nothing in the text.
_INLINE = frozenset(
    {
        "abbr", "b", "bdi", "bdo", "cite", "data", "dfn", "em", "font", "i", "kbd", "mark",
        "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var",
    }
)  # fmt: skip
# Elements that end one paragraph and start another.
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
        "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
        "summary", "table", "tr", "ul",
    }
)  # fmt: skip
_HEADINGS = {f"h{level}": "#" * level + " " for level in range(1, 7)}
# What the sink does at an element's start and end, by its tag: one look-up for the
# ~280 k elements of a large manual, not a test of each set in turn. Bits of `_RULES`;
# a tag absent has none (an element that only opens or closes a navigation region).
_SKIP, _ANCHOR, _CODE_RULE = 1, 2, 4  # inline, <a>, <code>: a mark at most
_EARLY = _SKIP | _ANCHOR | _CODE_RULE
_HEAD_RULE = 8  # <link>: the canonical link
_DROP_RULE, _TITLE_RULE, _BLOCK_RULE = 16, 32, 64
_SHAPE_RULE = 128  # headings, lists, items, <pre>, table cells: the block's shape
_RULES: dict[str, int] = {}
for _tags, _bit in (
    (_INLINE, _SKIP),
    (("a",), _ANCHOR),
    (("code",), _CODE_RULE),
    (("link",), _HEAD_RULE),
    (_DROP, _DROP_RULE),
    (("title",), _TITLE_RULE),
    (_BLOCKS, _BLOCK_RULE),
    ((*_HEADINGS, "ul", "ol", "li", "pre", "td", "th"), _SHAPE_RULE),
):
    for _tag in _tags:
        _RULES[_tag] = _RULES.get(_tag, 0) | _bit
del _tags, _bit, _tag
# Where a <code> element began or ended (the tags are cut out before parsing, see
# `_inline_tag`): a block that is one code element is code, as a <pre> is.
_CODE = "\x02"
# Where a link (<a href>) began and where an <a> ended: its words are counted as
# navigation (`shape`), and the marks are gone from the text.
_LINK, _LINK_END = "\x03", "\x04"
_MARKS = str.maketrans("", "", _CODE + _LINK + _LINK_END)


def _names_href(attrs: Attributes) -> bool:
    """Whether an <a> names a target: an attribute whose name holds "href" (xlink:href)."""
    return any("href" in name.lower() for name in attrs)


def _fenced(code: str) -> str:
    """Code as a fenced block, its fence longer than any run of backticks in it."""
    # Most code holds no backtick: one scan in C, not the pattern's over every character
    # (a large manual's <pre> blocks are a third of its text).
    runs = re.findall(r"`+", code) if "`" in code else ()
    longest = max((len(run) for run in runs), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


class HtmlText:
    """Collects an HTML page's visible text, its <title> and its first <h1>, from the events
    of the standard library's tokenizer (see `_parser`), and how many of its words are
    navigation (in a region `shape.names_navigation` names, or a link's text).

    Headings and list items keep a light markdown shape (`## Heading`, `- item`, `1. step`)
    so an HTML article reads like a markdown one, to the models and to the offline ranker.
    """

    def __init__(self) -> None:
        self.blocks: list[tuple[int, str]] = []  # (the list an item is in, or 0; text)
        self.title = ""
        self.h1 = ""
        self.canonical: str | None = None  # <link rel="canonical" href=...>, the first
        self._parts: list[str] = []
        self._prefix = ""
        self._item = 0  # the list the current block is an item of, or 0
        self._list_count = 0
        self._dropping = 0
        self._pre = 0
        self._lists: list[tuple[int, int]] = []  # per open list: (its id, next number or 0)
        self._in_title = False
        self._h1_state = 0  # 0 before the first <h1>, 1 inside it, 2 after it
        self.words = 0
        self.navigation_words = 0
        self._region: str | None = None  # the tag of the navigation region we are in
        self._region_depth = 0  # its elements of that tag open
        self._special = False  # dropping, in the <title> or in the first <h1> (`_restate`)

    def _link(self, attrs: Attributes) -> None:
        rel = (attrs.get("rel") or "").lower().split()
        if self.canonical is None and "canonical" in rel and attrs.get("href"):
            self.canonical = attrs["href"]

    def start(self, tag: str, attrs: Attributes) -> None:
        rule = _RULES.get(tag, 0)
        if rule & _EARLY:  # inline, <a>, <code>: at most a mark in the text
            if rule == _CODE_RULE:
                self.data(_CODE)
            elif rule == _ANCHOR and ("href" in attrs or _names_href(attrs)):
                self.data(_LINK)
            return
        if rule & _HEAD_RULE:
            self._link(attrs)
        if rule & _DROP_RULE:
            self._dropping += 1
            self._restate()
        if self._dropping:
            return
        if rule & _TITLE_RULE:
            self._in_title = True
            self._restate()
            return
        if rule & _BLOCK_RULE and self._parts:
            self._flush()
        if self._region is None:
            if attrs and names_navigation(tag, attrs.items()):
                self._region, self._region_depth = tag, 1
        elif tag == self._region:
            self._region_depth += 1
        if not rule & _SHAPE_RULE:
            return
        if tag in _HEADINGS:
            self._prefix = _HEADINGS[tag]
            if tag == "h1" and self._h1_state == 0:
                self._h1_state = 1
                self._restate()
        elif tag in ("ul", "ol"):
            self._list_count += 1
            self._lists.append((self._list_count, 1 if tag == "ol" else 0))
        elif tag == "li":
            list_id, number = self._lists[-1] if self._lists else (-1, 0)
            self._prefix = f"{number}. " if number else "- "
            self._item = list_id
            if number:
                self._lists[-1] = (list_id, number + 1)
        elif tag == "pre":
            self._pre += 1
        else:  # td, th
            self._parts.append(" ")

    def end(self, tag: str) -> None:
        rule = _RULES.get(tag, 0)
        if rule & _EARLY:
            if rule == _CODE_RULE:
                self.data(_CODE)
            elif rule == _ANCHOR:
                self.data(_LINK_END)
            return
        if rule & _DROP_RULE:
            self._dropping = max(0, self._dropping - 1)
            self._restate()
            return
        if self._dropping:
            return
        if rule & _TITLE_RULE:
            self._in_title = False
            self._restate()
            return
        if rule & _BLOCK_RULE and self._parts:
            self._flush()
        if tag == self._region:
            self._region_depth -= 1
            if not self._region_depth:
                self._flush()
                self._region = None
        if not rule & _SHAPE_RULE:
            return
        if tag in _HEADINGS or tag == "li":
            self._prefix, self._item = "", 0
        if tag == "h1" and self._h1_state == 1:
            self._h1_state = 2
            self._restate()
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        elif tag == "pre" and self._pre:
            self._pre -= 1

    def _restate(self) -> None:
        """Whether text goes anywhere but the current block (`data`'s slow path): noted
        when it changes, so most text events test one flag."""
        self._special = bool(self._dropping or self._in_title or self._h1_state == 1)

    def data(self, data: str) -> None:
        if not self._special:
            # Blank text before a block's first word (the line breaks between its tags)
            # changes no word of it; only a <pre> keeps its leading spaces.
            if self._parts or self._pre or not data.isspace():
                self._parts.append(data)
        elif self._dropping:
            return
        elif self._in_title:
            self.title += data
        else:  # inside the first <h1>
            self.h1 += data
            self._parts.append(data)

    def _flush(self) -> None:
        parts = self._parts
        if not parts:
            return  # most flushes (a block's end, then its parent's): nothing came between
        self._parts = []
        raw = parts[0] if len(parts) == 1 else "".join(parts)
        if _LINK in raw or _LINK_END in raw:
            raw = self._count_links(raw)
        words = raw.split()
        if not words:
            return  # blank: keep a pending prefix, as for a block of empty code below
        if self._pre:
            text = raw.replace(_CODE, "").strip("\n").rstrip()
            if not text:
                return
            bare = text
        else:
            text = " ".join(words)
            bare = text.replace(_CODE, "") if _CODE in text else text
            if not bare:
                return  # keep a pending prefix: `<li><p>step</p></li>` is still an item
        self.words += len(words)
        if self._region is not None:
            self.navigation_words += len(words)
        # Code never reads as a heading: a <pre>, or a block that is one <code>, is fenced
        # (its `# comment` lines would otherwise be headings, see `passages`).
        if self._pre:
            text = _fenced(text)
        elif text[0] == _CODE == text[-1] and text.count(_CODE) == 2 and not self._prefix:
            text = _fenced(text[1:-1])
        else:
            text = self._prefix + bare
        self.blocks.append((self._item, text))
        self._prefix, self._item = "", 0

    def _count_links(self, raw: str) -> str:
        """`raw` without its link marks, the words of its links counted as navigation
        (outside a navigation region, whose words all count already)."""
        if self._region is None:
            for piece in raw.split(_LINK)[1:]:
                self.navigation_words += len(piece.split(_LINK_END, 1)[0].split())
        return raw.replace(_LINK, "").replace(_LINK_END, "")

    @property
    def kind(self) -> PageKind:
        return kind_of(self.words, self.navigation_words)

    def close(self) -> None:
        """The page has ended (lxml's parser target calls it too)."""
        self._flush()

    def text(self) -> str:
        out: list[str] = []
        previous = 0
        for list_id, text in self.blocks:
            if out:
                # Items of one list stay together; anything else is its own paragraph.
                out.append("\n" if list_id and list_id == previous else "\n\n")
            out.append(text)
            previous = list_id
        return "".join(out)


@functools.cache
def _parser() -> Callable[[HtmlText], HTMLParser]:
    """The stdlib HTML tokenizer, feeding a `HtmlText`. Built on the first HTML article:
    a Markdown-only help centre never loads `html.parser` (nor its entity tables)."""
    from html.parser import HTMLParser

    class Parser(HTMLParser):
        def __init__(self, sink: HtmlText) -> None:
            super().__init__(convert_charrefs=True)
            self.sink = sink

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.sink.start(tag, dict(attrs))

        def handle_endtag(self, tag: str) -> None:
            self.sink.end(tag)

        def handle_data(self, data: str) -> None:
            self.sink.data(data)

    return Parser


@functools.cache
def _inline_tag() -> re.Pattern[str]:
    # A tag with a "<" inside is left to the parser, so script text like `a<b ...
    # </script>` cannot swallow the closing tag.
    names = "|".join(sorted(_INLINE))
    return re.compile(rf"</?(?:{names})\b(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*>", re.IGNORECASE)


@functools.cache
def _anchor_tags() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # An <a href> leaves the link mark, any </a> the end mark; an <a> naming no target
    # (DocBook's `<a id=...></a>`) leaves nothing.
    return (
        re.compile(r"<a\b((?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*)>", re.IGNORECASE),
        re.compile(r"</a\s*>", re.IGNORECASE),
    )


def _anchor(match: re.Match[str]) -> str:
    return _LINK if "href" in match.group(1).lower() else ""


@functools.cache
def _code_tag() -> re.Pattern[str]:
    # <code> and </code> leave a mark where they were (see `HtmlText._flush`).
    return re.compile(r"</?code\b(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*>", re.IGNORECASE)


def standard(text: str) -> Page:
    """The page in `text`, read with `html.parser`."""
    return _read(text, _standard_feed)


def with_lxml(text: str) -> Page:
    """The page in `text`, read with lxml. Raises `ParserMissing` when lxml cannot be
    imported (`lxml_etree`)."""
    return _read(text, _lxml_feed)


def _read(text: str, feed: Callable[[str, HtmlText], None]) -> Page:
    """The title (first <h1>, else <title>), the visible text, a blank line per block, the
    page's canonical link, and its kind."""
    collected = HtmlText()
    feed(text, collected)
    h1, named = (t.translate(_MARKS) for t in (collected.h1, collected.title))
    title = " ".join(h1.split()) or " ".join(named.split())
    return title, collected.text(), collected.canonical, collected.kind


def _standard_feed(text: str, sink: HtmlText) -> None:
    parser = _parser()(sink)
    opening, closing = _anchor_tags()
    text = closing.sub(_LINK_END, opening.sub(_anchor, _inline_tag().sub("", text)))
    parser.feed(_code_tag().sub(_CODE, text))
    parser.close()
    sink.close()


def _lxml_feed(text: str, sink: HtmlText) -> None:
    etree = lxml_etree()
    # The text is decoded already: handed over as UTF-8, with the encoding said, so a
    # page's own <meta charset> cannot make libxml2 read it again as something else.
    parser = etree.HTMLParser(target=sink, encoding="utf-8")
    parser.feed(text.encode("utf-8", errors="surrogatepass"))
    parser.close()


@functools.cache
def lxml_etree() -> Any:
    """lxml's etree module, imported on first use. Raises `ParserMissing` (with the fix)
    when it cannot be imported."""
    try:
        from lxml import etree
    except ImportError as exc:
        raise _missing(exc) from None
    return etree


def lxml_found() -> None:
    """Whether lxml is installed, without importing it (a process that only hands pages
    to workers need not load it). Raises `ParserMissing` when it is not."""
    import importlib.util

    try:
        found = importlib.util.find_spec("lxml.etree")
    except (ImportError, ValueError) as exc:
        raise _missing(exc) from None
    if found is None:
        raise _missing(ImportError("No module named 'lxml.etree'"))


def _missing(exc: BaseException) -> ParserMissing:
    return ParserMissing(
        f"lxml cannot be imported ({exc}); reinstall support-ask to bring it back "
        "(pip install --force-reinstall support-ask)"
    )
