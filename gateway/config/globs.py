"""The patterns of `articles.exclude`: which files under a help-centre folder are not articles.

A pattern is matched against a path relative to the folder walked (one given by
--articles or articles.paths), its parts joined by `/`:

- without a `/` (`genindex.html`, `changelog*`), it matches a file's or a folder's name,
  at any depth;
- with a `/` (`api/*.html`, `**/changelog*`, `/search.html`), it matches the whole path
  from the folder walked (a leading `/` only says so);
- `*` and `?` stay within one name, `**` spans any number of folders, `[abc]`, `[a-z]`,
  `[!0-9]` is one character of a set;
- with a trailing `/` (`_static/`), it matches folders only.

A folder that matches is not walked, so nothing under it is read. These are the rules of a
`.gitignore` file (less its `!` re-inclusion), which most writers of a help centre know.
They are compiled into one regular expression with `re`, which every run has loaded: a
library for them would add its import to every question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.record import record


class BadPattern(ValueError):
    """A pattern that cannot mean what it says; the message says why."""


def _name(part: str) -> str:
    """The expression for one part of a path (between two `/`)."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            while i + 1 < len(part) and part[i + 1] == "*":
                i += 1  # `a**b` is `a*b`, as in .gitignore
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = part.find("]", i + 2)  # a `]` right after `[` (or `[!`) is in the set
            if part[i + 1 : i + 2] in ("!", "^"):
                end = part.find("]", i + 3)
            if end < 0:
                raise BadPattern(f"a [ with no closing ] in {part!r}")
            inner = part[i + 1 : end]
            if inner[:1] in ("!", "^"):  # git reads both as "not"
                out.append(f"[^/{_members(inner[1:])}]")
            else:
                out.append(f"[{_members(inner)}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _members(text: str) -> str:
    """A set's members as `re` reads them: ranges kept, its own specials escaped."""
    return re.sub(r"([\\\[^])", r"\\\1", text)


def translate(pattern: str) -> tuple[str, bool]:
    """The expression a path relative to the folder walked must match whole, and whether
    the pattern is for folders only. Raises BadPattern."""
    folders_only = pattern.endswith("/")
    body = pattern.rstrip("/")
    anchored = "/" in body
    body = body.lstrip("/")
    if not body.strip():
        raise BadPattern("it names no file (it would leave out the whole help centre)")
    parts = body.split("/")
    if "" in parts:
        raise BadPattern("it has an empty part (`//`)")
    regex = "" if anchored else "(?:.*/)?"
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _name(part) + ("" if last else "/")
    return regex, folders_only


@record
class Exclude:
    """Compiled patterns: `file(path)` and `folder(path)` say whether a path (relative to
    the folder walked, with `/`) is left out."""

    patterns: tuple[str, ...]
    _files: re.Pattern[str] | None
    _folders: re.Pattern[str] | None

    @classmethod
    def of(cls, patterns: Sequence[str]) -> Exclude:
        files: list[str] = []
        folders: list[str] = []
        for pattern in patterns:
            regex, folders_only = translate(pattern)
            folders.append(regex)
            if not folders_only:
                files.append(regex)

        def compiled(regexes: list[str]) -> re.Pattern[str] | None:
            return re.compile("|".join(f"(?:{r})" for r in regexes)) if regexes else None

        return cls(tuple(patterns), compiled(files), compiled(folders))

    def file(self, path: str) -> bool:
        return self._files is not None and self._files.fullmatch(path) is not None

    def folder(self, path: str) -> bool:
        return self._folders is not None and self._folders.fullmatch(path) is not None
