"""Opening a help centre: the files found under the paths, read now or kept in an index.

A small set (its files hold at most `DIRECT_BYTES`) and a set sent whole (`max_tokens:
all`) are read this run into a `MemoryIndex`: reading a dozen articles costs less than
opening a database, and never imports sqlite3. Any other set is kept in a `SqliteIndex`
in the user cache dir and refreshed to the files found now. Both rank alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.knowledge.files import ArticleCaps, Found, discover
from gateway.knowledge.index import Index, MemoryIndex
from gateway.knowledge.load import ArticlesError, read
from gateway.model import Article

if TYPE_CHECKING:
    from gateway.knowledge.store import RefreshProgress

DIRECT_BYTES = 256_000
Warn = Callable[[str], None]


def is_small(found: Sequence[Found]) -> bool:
    return sum(f.size for f in found) <= DIRECT_BYTES


def read_found(found: Sequence[Found], warn: Warn) -> tuple[Article, ...]:
    articles = []
    for file in found:
        article, problem = read(file.path)
        if article is None:
            warn(f"skipped {file.path}: {problem}")
        else:
            articles.append(article)
    return tuple(articles)


def open_centre(
    paths: Sequence[Path],
    *,
    limits: ArticleCaps,
    cache_dir: Callable[[], Path],
    whole: bool,
    warn: Warn,
    progress: Callable[[RefreshProgress], None] | None = None,
    keep: bool | None = None,
    exclude: Sequence[str] = (),
) -> Index:
    """The help centre under `paths` as an Index.

    `keep`: True keeps an index on disk, False reads the files now, None decides by size
    (`whole` never keeps one). `exclude`: patterns of files in the folders that are not
    articles (`files.walk`). `cache_dir` is asked only when an index is kept. Every
    skipped file is warned about. Raises `files.SetTooLarge` past the caps,
    `load.ArticlesError` when no article is readable.
    """
    found, warnings = discover(paths, limits, exclude)
    for warning in warnings:
        warn(warning)
    index: Index
    if keep is None:
        keep = not whole and not is_small(found)
    if not keep:
        index = MemoryIndex(read_found(found, warn))
    else:
        index = _stored(paths, found, cache_dir, warn, progress)
    if index.size().articles == 0:
        where = ", ".join(str(p) for p in paths)
        raise ArticlesError(f"no readable article in {where}", [])
    return index


def _stored(
    paths: Sequence[Path],
    found: Sequence[Found],
    cache_dir: Callable[[], Path],
    warn: Warn,
    progress: Callable[[RefreshProgress], None] | None,
) -> Index:
    from gateway.knowledge import store

    path = store.index_path(cache_dir(), paths)
    if not path.exists():  # a first index: every file is read
        from gateway.knowledge.reading import start_early

        start_early(found)
    try:
        index = store.SqliteIndex.open(path, paths, warn=warn)
    except store.IndexUnavailable as exc:
        warn(f"{exc}: reading every article this run instead of keeping an index")
        return MemoryIndex(read_found(found, warn))
    try:
        index.refresh(found, progress=progress)
    except store.IndexBusy:
        index.close()
        warn(
            "another support-ask has been updating the article index for over a minute; "
            "indexing in memory for this run"
        )
        index = store.SqliteIndex.open(None, paths, warn=warn)
        index.refresh(found, progress=progress)
    for warning in index.warnings:
        warn(warning)
    return index
