"""Reading help-centre articles: one file to an Article, or every file under some paths.

Markdown and plain text are kept as written (front matter aside); HTML is reduced to text.
Every article gets a title. Files that cannot be used are skipped with a warning each, and
the warnings are returned, not printed: the caller decides how to show them.

When paths were given but not one readable article came of them, `load_articles` raises
`ArticlesError` (carrying the warnings that explain why), so the CLI can exit 66 without
re-deriving the reason. Asking for no paths at all is not an error: it yields no articles.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.knowledge.files import HTML_SUFFIXES, ArticleCaps, discover
from gateway.knowledge.shape import markdown_kind
from gateway.model import Article

if TYPE_CHECKING:
    from gateway.knowledge.htmltext import Reader


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


def read(path: str, html: Reader | None = None) -> tuple[Article | None, str]:
    """The article at `path`, or None and the reason it was skipped. `html`: how an HTML
    page is read (`htmltext`; None: with the standard library's parser)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return None, f"cannot read it ({exc.strerror or type(exc).__name__})"
    return parse(path, data, html)


def parse(path: str, data: bytes, html: Reader | None = None) -> tuple[Article | None, str]:
    """The article in the bytes `data` read from `path`, or None and why it is unusable;
    `html` as for `read`."""
    text, problem = _decode(data, path)
    if text is None:
        return None, problem
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if os.path.splitext(path)[1].lower() in HTML_SUFFIXES:
        if html is None:
            from gateway.knowledge.htmltext import standard

            html = standard
        title, body, url, kind = html(text)
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
