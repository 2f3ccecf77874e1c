"""Opening a help centre: the files found under the paths, read now or kept in an index.

A small set (its files hold at most `DIRECT_BYTES`) and a set sent whole (`max_tokens:
all`) are read this run into a `MemoryIndex`: reading a dozen articles costs less than
opening a database, and never imports sqlite3. Any other set is kept in a `SqliteIndex`
in the user cache dir and refreshed to the files found now, or, trusted (`articles.refresh:
on_index`), read as `support-ask index` left it without looking at the files. Both rank
alike.
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
    from gateway.knowledge.store import RefreshProgress, SqliteIndex

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
    trust: bool = False,
) -> Index:
    """The help centre under `paths` as an Index.

    `keep`: True keeps an index on disk, False reads the files now, None decides by size
    (`whole` never keeps one). `exclude`: patterns of files in the folders that are not
    articles (`files.walk`). `trust` (`articles.refresh: on_index`): a kept index made
    whole for these settings is read as it is, walking nothing; only where there is none
    are the files walked. `cache_dir` is asked only when an index is kept or trusted. Every
    skipped file is warned about. Raises `files.SetTooLarge` past the caps,
    `load.ArticlesError` when no article is readable.
    """
    opened, asked = None, None
    if trust and keep is not False and not whole:
        opened = _kept(paths, cache_dir, warn)
        if opened is not None:
            asked = _asked(exclude, limits)
            if opened.trusted(asked):
                for warning in opened.warnings:
                    warn(warning)
                return _readable(opened, paths)
    try:
        found, warnings = discover(paths, limits, exclude)
    except BaseException:  # past the caps (or stopped): the index opened is not used
        if opened is not None:
            opened.close()
        raise
    for warning in warnings:
        warn(warning)
    index: Index
    if keep is None:
        keep = not whole and not is_small(found)
    if not keep:
        if opened is not None:
            opened.close()
        index = MemoryIndex(read_found(found, warn))
    else:
        if asked is None:  # computed above only where an index was opened to trust
            asked = _asked(exclude, limits)
        index = _stored(paths, found, cache_dir, warn, progress, asked, opened)
    return _readable(index, paths)


def _readable(index: Index, paths: Sequence[Path]) -> Index:
    if index.size().articles == 0:
        where = ", ".join(str(p) for p in paths)
        raise ArticlesError(f"no readable article in {where}", [])
    return index


def _asked(exclude: Sequence[str], limits: ArticleCaps) -> bytes:
    from gateway.knowledge import kept

    return kept.asked(exclude, limits)


def _kept(paths: Sequence[Path], cache_dir: Callable[[], Path], warn: Warn) -> SqliteIndex | None:
    """The index kept for `paths`, opened, if there is one to open."""
    from gateway.knowledge import indexfile, store

    path = indexfile.index_path(cache_dir(), paths)
    if not path.exists():
        return None
    try:
        return store.SqliteIndex.open(path, paths, warn=warn)
    except store.IndexUnavailable:
        return None


def _stored(
    paths: Sequence[Path],
    found: Sequence[Found],
    cache_dir: Callable[[], Path],
    warn: Warn,
    progress: Callable[[RefreshProgress], None] | None,
    asked: bytes,
    opened: SqliteIndex | None = None,
) -> Index:
    """The kept index (`opened` already, else opened here), refreshed to `found`."""
    from gateway.knowledge import indexfile, store

    first = False
    if opened is not None:
        index = opened
    else:
        path = indexfile.index_path(cache_dir(), paths)
        if first := not path.exists():  # a first index: every file is read
            from gateway.knowledge.reading import start_early

            start_early(found)
        try:
            index = store.SqliteIndex.open(path, paths, warn=warn)
        except store.IndexUnavailable as exc:
            warn(f"{exc}: reading every article this run instead of keeping an index")
            return MemoryIndex(read_found(found, warn))
    try:
        index.refresh(found, progress=progress, asked=asked)
    except (store.IndexBusy, store.IndexUnwritable) as exc:
        index.close()
        if first and isinstance(exc, store.IndexUnwritable):
            # Its rolled-back writes fill its WAL file as far as the disk let it grow (a
            # checkpoint cannot empty it on a full disk): removed, they give the space back.
            indexfile.clear(cache_dir(), paths)
        if isinstance(exc, store.IndexBusy):
            why = "another support-ask has been updating the article index for over a minute"
            fix = "it is kept by that one"
        else:
            why = f"the article index could not be written ({exc})"
            fix = "free space on its disk, or set XDG_CACHE_HOME, to keep it"
        index = store.SqliteIndex.instead(why, fix, paths, warn)
        index.refresh(found, progress=progress, asked=asked)
    for warning in index.warnings:
        warn(warning)
    return index
