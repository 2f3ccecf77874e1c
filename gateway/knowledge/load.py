"""Reading help-centre articles: one file to an Article, or every file under some paths.

Markdown and plain text are kept as written (front matter aside); HTML is reduced to text.
Every article gets a title. Files that cannot be used are skipped with a warning each, and
the warnings are returned, not printed: the caller decides how to show them.

When paths were given but not one readable article came of them, `load_articles` raises
`ArticlesError` (carrying the warnings that explain why), so the CLI can exit 66 without
re-deriving the reason. Asking for no paths at all is not an error: it yields no articles.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.knowledge.files import HTML_SUFFIXES, ArticleCaps, discover
from gateway.knowledge.shape import kind_of, markdown_kind, names_navigation
from gateway.model import Article, PageKind

if TYPE_CHECKING:
    from html.parser import HTMLParser


class ArticlesError(Exception):
    """Paths were given, but no readable article was found in them."""

    def __init__(self, message: str, warnings: Sequence[str]) -> None:
        super().__init__(message)
        self.message = message
        self.warnings = list(warnings)


def load_articles(
    paths: Sequence[Path], limits: ArticleCaps | None = None, exclude: Sequence[str] = ()
) -> tuple[tuple[Article, ...], list[str]]:
    """The articles under `paths`, in a stable order (`files.discover`, leaving out what
    `exclude` matches), and a warning per skipped file. Raises `ArticlesError` when `paths`
    is not empty but yields no readable article, `files.SetTooLarge` past the caps."""
    found, warnings = discover(paths, limits, exclude)
    articles: list[Article] = []
    for file in found:
        article, problem = read(file.path)
        if article is not None:
            articles.append(article)
        else:
            warnings.append(f"skipped {file.path}: {problem}")
    if paths and not articles:
        where = ", ".join(str(p) for p in paths)
        raise ArticlesError(f"no readable article in {where}", warnings)
    return tuple(articles), warnings


def read(path: str) -> tuple[Article | None, str]:
    """The article at `path`, or None and the reason it was skipped."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return None, f"cannot read it ({exc.strerror or type(exc).__name__})"
    return parse(path, data)


def parse(path: str, data: bytes) -> tuple[Article | None, str]:
    """The article in the bytes `data` read from `path`, or None and why it is unusable."""
    text, problem = _decode(data, path)
    if text is None:
        return None, problem
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if os.path.splitext(path)[1].lower() in HTML_SUFFIXES:
        title, body, url, kind = _from_html(text)
    else:
        title, body, url = _from_markdown(text)
        kind = markdown_kind(body)
    body = body.strip()
    if not body:
        return None, "empty"
    title = title or _title_from_name(Path(path))
    return Article(title=title, path=path, text=body, url=_public(url), kind=kind), ""


def _public(url: str | None) -> str | None:
    """An article's stated address when it is a whole web address by the one rule for
    one (`gateway.config.urls`): a relative one names no page a customer can open, so
    none is kept rather than one guessed."""
    if url is None:
        return None
    from gateway.config.urls import url_problem

    url = url.strip().strip("'\"")
    problem = url_problem(url, name="an article's url", appended=None, example="", userinfo="")
    return None if problem is not None else url


_BINARY = "not a text file (binary)"


def _decode(data: bytes, path: str) -> tuple[str | None, str]:
    """The file's text (UTF-8, with or without a byte-order mark; UTF-16 with one; else
    a legacy encoding, see `encoding`), or None and why not."""
    # Editors on Windows save UTF-16 with a byte-order mark.
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), ""
        except UnicodeDecodeError:
            return None, "not UTF-16, though it starts with UTF-16's byte-order mark"
    if b"\x00" in data:
        return None, _BINARY
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        from gateway.knowledge.encoding import legacy

        return legacy(data, path)


_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(?:---|\.\.\.)\n", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.MULTILINE)
_FRONT_URL = re.compile(r"^url:\s*(.+?)\s*$", re.MULTILINE)
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
# The title line is taken whole (possessively: no backtracking through each line in
# search of the underline); its trailing blanks go with the final strip.
_SETEXT_HEADING = re.compile(r"^(?=\S)(.++)\n {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE)
_INLINE_MARKUP = re.compile(r"[*_`]+")


def _from_markdown(text: str) -> tuple[str, str, str | None]:
    """The title (front matter, else the first heading), the text without front matter,
    and the front matter's `url:`."""
    title = ""
    url = None
    front = _FRONT_MATTER.match(text)
    if front:
        text = text[front.end() :]
        found = _FRONT_TITLE.search(front.group(1))
        if found:
            title = found.group(1).strip("'\"")
        stated = _FRONT_URL.search(front.group(1))
        if stated:
            url = stated.group(1)
    if not title:
        # The first heading of either kind. A setext heading can only win if it starts
        # before the first ATX one, and then it also ends before it: search only up to it.
        # A code block's `# comment` is no heading: the search runs with blocks blanked.
        prose = _blank_code(text)
        first = _ATX_HEADING.search(prose)
        setext = _SETEXT_HEADING.search(prose, 0, len(text) if first is None else first.start())
        if setext is not None:
            first = setext
        if first is not None:
            title = _INLINE_MARKUP.sub("", first.group(1)).strip()
    if not title:
        title = _plain_title(text)
    return title, text, url


def _blank_code(text: str) -> str:
    """`text` with each fenced code block's lines blanked (so offsets hold)."""
    if "```" not in text and "~~~" not in text:
        return text
    from gateway.knowledge.passages import Fence

    fence = Fence()
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if fence.edge(line) or fence.inside:
            lines[number] = " " * len(line)
    return "\n".join(lines)


_PLAIN_TITLE = re.compile(r"\A\s*([^\n]{1,80}?)[ \t]*\n[ \t]*\n")


def _plain_title(text: str) -> str:
    """A plain-text article's title: a short first line on its own, without a full stop."""
    found = _PLAIN_TITLE.match(text)
    if not found:
        return ""
    line = found.group(1)
    if len(line.split()) > 10 or line[-1] in ".!?:;," or line.lstrip()[:1] in "-*+>|#":
        return ""
    return line


def _title_from_name(path: Path) -> str:
    """`resetting-your_password` -> `Resetting your password`."""
    words = re.sub(r"[-_\s]+", " ", path.stem).strip()
    return words[:1].upper() + words[1:] if words else path.name


# Elements whose text is never content.
_DROP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
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
# Where a <code> element began or ended (the tags are cut out before parsing, see
# `_inline_tag`): a block that is one code element is code, as a <pre> is.
_CODE = "\x02"
# Where a link (<a href>) began and where an <a> ended: its words are counted as
# navigation (`shape`), and the marks are gone from the text.
_LINK, _LINK_END = "\x03", "\x04"
_MARKS = str.maketrans("", "", _CODE + _LINK + _LINK_END)


def _fenced(code: str) -> str:
    """Code as a fenced block, its fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


class _HtmlText:
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

    def link(self, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        rel = (values.get("rel") or "").lower().split()
        if self.canonical is None and "canonical" in rel and values.get("href"):
            self.canonical = values["href"]

    def start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP:
            self._dropping += 1
        if self._dropping:
            return
        if tag == "title":
            self._in_title = True
            return
        if tag in _BLOCKS:
            self._flush()
        if self._region is None:
            if attrs and names_navigation(tag, attrs):
                self._region, self._region_depth = tag, 1
        elif tag == self._region:
            self._region_depth += 1
        if tag in _HEADINGS:
            self._prefix = _HEADINGS[tag]
            if tag == "h1" and self._h1_state == 0:
                self._h1_state = 1
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
        elif tag in ("td", "th"):
            self._parts.append(" ")

    def end(self, tag: str) -> None:
        if tag in _DROP:
            self._dropping = max(0, self._dropping - 1)
            return
        if self._dropping:
            return
        if tag == "title":
            self._in_title = False
            return
        if tag in _BLOCKS:
            self._flush()
        if tag == self._region:
            self._region_depth -= 1
            if not self._region_depth:
                self._flush()
                self._region = None
        if tag in _HEADINGS or tag == "li":
            self._prefix, self._item = "", 0
        if tag == "h1" and self._h1_state == 1:
            self._h1_state = 2
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        elif tag == "pre" and self._pre:
            self._pre -= 1

    def data(self, data: str) -> None:
        if self._dropping:
            return
        if self._in_title:
            self.title += data
            return
        if self._h1_state == 1:
            self.h1 += data
        self._parts.append(data)

    def _flush(self) -> None:
        raw = "".join(self._parts)
        self._parts = []
        if _LINK in raw or _LINK_END in raw:
            raw = self._count_links(raw)
        pre = raw.replace(_CODE, "").strip("\n").rstrip() if self._pre else ""
        words = raw.split()
        text = pre or " ".join(words)
        if not text.replace(_CODE, ""):
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
            text = self._prefix + text.replace(_CODE, "")
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

    def finish(self) -> None:
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
def _parser() -> Callable[[_HtmlText], HTMLParser]:
    """The stdlib HTML tokenizer, feeding a `_HtmlText`. Built on the first HTML article:
    a Markdown-only help centre never loads `html.parser` (nor its entity tables)."""
    from html.parser import HTMLParser

    class Parser(HTMLParser):
        def __init__(self, sink: _HtmlText) -> None:
            super().__init__(convert_charrefs=True)
            self.sink = sink

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "link":
                self.sink.link(attrs)
            self.sink.start(tag, attrs)

        def handle_endtag(self, tag: str) -> None:
            self.sink.end(tag)

        def handle_data(self, data: str) -> None:
            self.sink.data(data)

    return Parser


@functools.cache
def _inline_tag() -> re.Pattern[str]:
    # Inline elements change nothing in the text, so they are cut out before parsing: the
    # stdlib parser costs per tag, and this makes a typical article page ~1.5x faster. A tag
    # with a "<" inside is left to the parser, so script text like `a<b ... </script>`
    # cannot swallow the closing tag.
    return re.compile(
        r"</?(?:abbr|b|bdi|bdo|cite|data|dfn|em|font|i|kbd|mark|q|s|samp|small|span|"
        r"strong|sub|sup|time|u|var)\b(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*>",
        re.IGNORECASE,
    )


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
    # <code> and </code> leave a mark where they were (see `_HtmlText._flush`).
    return re.compile(r"</?code\b(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*>", re.IGNORECASE)


def _from_html(text: str) -> tuple[str, str, str | None, PageKind]:
    """The title (first <h1>, else <title>), the visible text, a blank line per block, the
    page's canonical link, and its kind."""

    collected = _HtmlText()
    parser = _parser()(collected)
    opening, closing = _anchor_tags()
    text = closing.sub(_LINK_END, opening.sub(_anchor, _inline_tag().sub("", text)))
    parser.feed(_code_tag().sub(_CODE, text))
    parser.close()
    collected.finish()
    h1, named = (t.translate(_MARKS) for t in (collected.h1, collected.title))
    title = " ".join(h1.split()) or " ".join(named.split())
    return title, collected.text(), collected.canonical, collected.kind
