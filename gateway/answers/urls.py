"""An article's public URL: the one it states (Markdown front matter `url:`, an HTML
page's canonical link, read by `gateway.knowledge.load`), else `articles.url_base` joined
with its path under the folder it was found in. With neither, it has none: a citation
then names its path, and no address is ever made up.

A Markdown or plain-text file is published without its suffix (`billing/refunds.md` is
`<url_base>/billing/refunds`, as static-site generators publish it); an HTML file is
served as it is, so its name is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from urllib.parse import quote

_PUBLISHED_WITHOUT_SUFFIX = frozenset({".md", ".markdown", ".txt"})


def public_url(
    path: str, stated: str | None, *, roots: Sequence[str], url_base: str | None
) -> str | None:
    """The URL of the article at `path` (found under one of `roots`, the paths given as
    `--articles`), or None when none is known."""
    if stated:
        return stated
    if url_base is None:
        return None
    relative = _under(PurePath(path), [PurePath(r) for r in roots])
    if relative is None:
        return None
    if relative.suffix.lower() in _PUBLISHED_WITHOUT_SUFFIX:
        relative = relative.with_suffix("")
    return f"{url_base.rstrip('/')}/{quote(relative.as_posix())}"


def _under(path: PurePath, roots: Sequence[PurePath]) -> PurePath | None:
    """`path` relative to the folder it was found in; a file given by itself is under
    its own folder. The deepest root wins when roots nest."""
    best: PurePath | None = None
    for root in roots:
        if path == root:
            candidate = PurePath(path.name)
        elif path.is_relative_to(root):
            candidate = path.relative_to(root)
        else:
            continue
        if best is None or len(candidate.parts) < len(best.parts):
            best = candidate
    return best
