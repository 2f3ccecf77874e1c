"""Finding the articles under the paths given, before any is read.

Folders are walked recursively in order of relative path (hidden entries and files of
other types are ignored); a file named directly is taken whatever its suffix; the same
file reached twice (by another path or a symlink) is taken once. Symlinked folders are
followed; one that leads back into a folder being walked (a loop) is skipped with a
warning, one already walked elsewhere is skipped quietly (its files are taken already).
Files and folders matching `articles.exclude` (`gateway.config.globs`), by their path
inside the folder walked, are left out, and a folder left out is not walked.

Two caps keep a typo like `--articles /` from reading a disk: an article above
`max_article_bytes` is skipped with a warning naming it, and a set above `max_set_bytes`
or `max_set_files` raises `SetTooLarge` as soon as the walk crosses the line, before any
file is read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from gateway.config.globs import Exclude
from gateway.record import record

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt"})  # read as markdown: plain text is too
HTML_SUFFIXES = frozenset({".html", ".htm"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES

MB = 1_000_000


@record
class ArticleCaps:
    """The caps (config `articles.max_article_bytes`, `max_set_bytes`, `max_set_files`)."""

    max_article_bytes: int = 5 * MB
    max_set_bytes: int = 1_000 * MB
    max_set_files: int = 100_000


class Found(NamedTuple):
    """One file to read: the path it was reached by, and its identity and version. A
    NamedTuple, not a record: every question over a kept index makes one per file of
    the set (thousands in a large help centre), and a tuple is several times cheaper."""

    path: str
    size: int
    mtime_ns: int
    device: int
    inode: int


@record
class Walked:
    """What a walk found: the files to read, a warning per path skipped, and how many
    files and folders `articles.exclude` left out."""

    found: list[Found]
    warnings: list[str]
    excluded_files: int = 0
    excluded_folders: int = 0


class SetTooLarge(Exception):
    """The paths hold more than the caps allow; the message names the cap and the fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _size(n: int) -> str:
    return f"{n / MB:,.1f} MB" if n >= MB // 10 else f"{n:,} bytes"


# A file found made as the tuple it is: `Found`'s own constructor is a Python function,
# called once per file of every question over a kept index.
_tuple = tuple.__new__

# The errors that make `Path.is_file` say False (a dangling symlink, a loop): such a file
# is "not a regular file"; any other error is reported as it is.
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


class _Walk:
    def __init__(self, limits: ArticleCaps, exclude: Exclude | None) -> None:
        self.limits = limits
        self.exclude = exclude
        self.excluded_files = 0
        self.excluded_folders = 0
        self.found: list[Found] = []
        self.warnings: list[str] = []
        self.seen: set[tuple[int, int]] = set()  # files taken, by (device, inode)
        self.walked: set[tuple[int, int]] = set()  # folders walked
        self.total = 0
        self.entries = 0  # every name listed while walking, articles or not

    def take(self, path: str) -> None:
        # Once per file of every question over a kept index (its freshness is checked
        # against these values): local names, one test for both of the set's caps.
        try:
            info = os.stat(path)
        except OSError as exc:
            if exc.errno in _GONE:
                self.warnings.append(f"skipped {path}: not a regular file")
            else:
                self.warnings.append(f"skipped {path}: cannot read it ({exc.strerror})")
            return
        if not stat.S_ISREG(info.st_mode):
            self.warnings.append(f"skipped {path}: not a regular file")
            return
        identity = (info.st_dev, info.st_ino)
        seen = self.seen
        if identity in seen:
            return
        seen.add(identity)
        size = info.st_size
        limits = self.limits
        if size > limits.max_article_bytes:
            cap = limits.max_article_bytes
            self.warnings.append(
                f"skipped {path}: {_size(size)}, over the {_size(cap)} cap for one "
                "article (raise articles.max_article_bytes in the config to read it)"
            )
            return
        self.total += size
        found = self.found
        found.append(_tuple(Found, (path, size, info.st_mtime_ns, info.st_dev, info.st_ino)))
        if len(found) > limits.max_set_files or self.total > limits.max_set_bytes:
            self._over()

    def _over(self) -> None:
        """Raise `SetTooLarge` for the cap the walk has crossed."""
        if len(self.found) > self.limits.max_set_files:
            raise self._too_many_files()
        raise SetTooLarge(
            f"the articles hold more than {_size(self.limits.max_set_bytes)} (the cap, "
            "articles.max_set_bytes); check the --articles path, or raise the cap in "
            "the config"
        )

    def _too_many_files(self) -> SetTooLarge:
        return SetTooLarge(
            f"the articles hold more than {self.limits.max_set_files:,} files (the cap, "
            "articles.max_set_files); check the --articles path, or raise the cap in the "
            "config"
        )

    def folder(self, root: str) -> None:
        """Every article file under `root`, in order of relative path."""
        files: list[str] = []
        self._collect(root, "", [], files)
        # Every path is the root's own path joined to its relative path (`os.DirEntry.path`
        # joins a listed folder's path to the name), so the full paths sort as the relative
        # ones do, and a list of strings sorts faster than one of pairs.
        files.sort()
        take = self.take
        for path in files:
            take(path)

    def _collect(
        self,
        folder: str,
        relative: str,
        ancestors: list[tuple[int, int]],
        out: list[str],
    ) -> None:
        try:
            info = os.stat(folder)
        except OSError as exc:
            self.warnings.append(f"skipped {folder}: cannot read it ({exc.strerror})")
            return
        identity = (info.st_dev, info.st_ino)
        if identity in ancestors:
            self.warnings.append(
                f"skipped {folder}: a symlink loop (it leads back to a folder above it)"
            )
            return
        if identity in self.walked:
            return  # reached before through another link: its files are taken
        self.walked.add(identity)
        try:
            with os.scandir(folder) as entries:
                listed = _listed(entries)
        except OSError as exc:
            self.warnings.append(f"skipped {folder}: cannot read it ({exc.strerror})")
            return
        self.entries += len(listed)
        if self.entries > 10 * self.limits.max_set_files:
            # A walk through a whole disk, whatever it holds, is a wrong path.
            raise SetTooLarge(
                f"the articles path holds more than {10 * self.limits.max_set_files:,} "
                "entries (ten times the cap articles.max_set_files); check the --articles "
                "path, or raise the cap in the config"
            )
        suffixes = tuple(SUFFIXES)
        below = [*ancestors, identity]
        exclude = self.exclude
        # Once per entry of every question over a kept index: the relative path is made
        # only where the patterns ask for it or a folder is walked into.
        for name, path, is_dir in listed:
            if name[0] == ".":  # a listed name is never empty
                continue
            if is_dir:
                inner = _inner(relative, name)
                if exclude is not None and exclude.folder(inner):
                    self.excluded_folders += 1
                    continue
                self._collect(path, inner, below, out)
            elif name.lower().endswith(suffixes):
                if exclude is not None and exclude.file(_inner(relative, name)):
                    self.excluded_files += 1
                    continue
                out.append(path)
        if len(out) > self.limits.max_set_files:
            raise self._too_many_files()


def _inner(relative: str, name: str) -> str:
    """The path of `name`, listed in the folder at `relative`, inside the folder walked."""
    return f"{relative}/{name}" if relative else name


def _listed(entries: Iterator[os.DirEntry[str]]) -> list[tuple[str, str, bool]]:
    """Each entry's name, path and whether it is a folder (`_is_dir`)."""
    every = list(entries)
    try:
        # Asking each entry alone costs a call per file of a large help centre; an
        # entry that cannot say (a rare symlink's error) sends the listing the slow way.
        return [(e.name, e.path, e.is_dir()) for e in every]
    except OSError:
        return [(e.name, e.path, _is_dir(e)) for e in every]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks: symlinked folders are walked
    except OSError:
        return False


def walk(
    paths: Sequence[Path], limits: ArticleCaps | None = None, exclude: Sequence[str] = ()
) -> Walked:
    """The files to read under `paths`, in a stable order, a warning per one skipped (or
    per path that does not exist), and what `exclude` left out of the folders. A file
    named in `paths` is taken whatever the patterns say. Raises `SetTooLarge` past the caps."""
    state = _Walk(limits or ArticleCaps(), Exclude.of(exclude) if exclude else None)
    for root in paths:
        if root.is_dir():
            state.folder(os.fspath(root))
        elif root.exists() or root.is_symlink():
            state.take(os.fspath(root))
        else:
            state.warnings.append(f"{root}: no such file or folder")
    return Walked(state.found, state.warnings, state.excluded_files, state.excluded_folders)


def discover(
    paths: Sequence[Path], limits: ArticleCaps | None = None, exclude: Sequence[str] = ()
) -> tuple[list[Found], list[str]]:
    """`walk`'s files and warnings."""
    walked = walk(paths, limits, exclude)
    return walked.found, walked.warnings
