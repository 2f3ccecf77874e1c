"""Whether a help-centre page answers questions or only leads to the pages that do.

A book index, a table of contents, a site map or a list of links is made of the words of
the pages it points to, so it ranks high for almost any question and answers none: the
offline deployment once answered "how do I vacuum?" with a run of index entries. Such a
page is recognised when it is read (`load`), from its shape:

- **named so by its own markup**: HTML that marks a region as navigation, by the element
  (`<nav>`), its ARIA role (`navigation`, `doc-toc`, `doc-index`) or a class or id among
  `NAMES` (DocBook's `toc`, `index`, `navheader`; AsciiDoc's `toc`; Sphinx's
  `toctree-wrapper`; the usual `breadcrumb`, `sitemap`);
- **link-dense**: words that are the text of a link (an `<a href>`, a Markdown
  `[text](target)`), outside such a region.

A page whose words are at least `NAVIGATION_SHARE` navigation words is a navigation page
(`PageKind.NAVIGATION`). The share was chosen on the two manuals of `bench/run offline`
(bench/RESULTS.md): over PostgreSQL's 1,169 pages it separates the book index, the part
and chapter tables of contents and the reference lists (0.5 to 1.0) from the pages that
answer (below 0.3, but for chapter pages whose one-line introduction sits under their
table of contents); over git's 242 pages no answering page comes near it. A list's shape
alone is no sign: a command's page of options is mostly a definition list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gateway.model import PageKind

NAVIGATION_SHARE = 0.5
# Class and id tokens that name a navigation region, in the generators' own words.
NAMES = frozenset(
    {
        "breadcrumb", "breadcrumbs", "index", "nav", "navbar", "navfooter", "navheader",
        "navigation", "site-map", "sitemap", "table-of-contents", "toc", "toctree-wrapper",
    }
)  # fmt: skip
ROLES = frozenset({"navigation", "doc-toc", "doc-index"})


def kind_of(words: int, navigation_words: int) -> PageKind:
    """A page of `words` words, `navigation_words` of them in navigation regions or links."""
    if words and navigation_words >= NAVIGATION_SHARE * words:
        return PageKind.NAVIGATION
    return PageKind.ARTICLE


def names_navigation(tag: str, attrs: Iterable[tuple[str, str | None]]) -> bool:
    """Whether an HTML element marks its content as navigation."""
    if tag == "nav":
        return True
    for name, value in attrs:
        if not value:
            continue
        if name == "role" and value.lower() in ROLES:
            return True
        if name in ("class", "id") and not NAMES.isdisjoint(value.lower().split()):
            return True
    return False


_MARKDOWN_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\([^)\n]*\)")


def markdown_kind(text: str) -> PageKind:
    """A Markdown page's kind: by the share of its words that are link text."""
    if "](" not in text:
        return PageKind.ARTICLE
    linked = sum(len(m.group(1).split()) for m in _MARKDOWN_LINK.finditer(text))
    return kind_of(len(text.split()), linked)
