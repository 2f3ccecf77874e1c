"""articles.exclude's patterns: what each form leaves out of a help-centre folder."""

from __future__ import annotations

import pytest

from gateway.config.globs import BadPattern, Exclude


@pytest.mark.parametrize(
    ("pattern", "path", "left_out"),
    [
        # a name alone: that file (or folder) at any depth
        ("genindex.html", "genindex.html", True),
        ("genindex.html", "reference/genindex.html", True),
        ("genindex.html", "genindex.html.bak", False),
        ("changelog*", "release/changelog-15.html", True),
        # a path: matched from the folder walked
        ("api/*.html", "api/users.html", True),
        ("api/*.html", "api/v2/users.html", False),  # * stays within one name
        ("api/*.html", "old/api/users.html", False),
        ("/search.html", "search.html", True),
        ("/search.html", "docs/search.html", False),
        # ** spans folders, none included
        ("**/changelog*", "changelog.md", True),
        ("**/changelog*", "a/b/changelog-2.md", True),
        ("docs/**/draft-*", "docs/draft-1.md", True),
        ("docs/**/draft-*", "docs/a/b/draft-1.md", True),
        ("docs/**/draft-*", "blog/draft-1.md", False),
        ("legacy/**", "legacy/x/y.html", True),
        # one character, of a set or not
        ("release-?.html", "release-9.html", True),
        ("release-?.html", "release-10.html", False),
        ("release-[0-9].html", "release-7.html", True),
        ("release-[!0-9].html", "release-x.html", True),
        ("release-[!0-9].html", "release-7.html", False),
        # the pattern's own characters are not special to the matcher
        ("faq (old).md", "faq (old).md", True),
        ("faq+.md", "faqq.md", False),
    ],
)
def test_a_pattern_leaves_out_the_files_it_names(pattern: str, path: str, left_out: bool) -> None:
    assert Exclude.of([pattern]).file(path) is left_out


def test_a_trailing_slash_means_folders_only() -> None:
    exclude = Exclude.of(["_static/"])
    assert exclude.folder("_static") and exclude.folder("theme/_static")
    assert not exclude.file("_static")  # a file of that name is an article


def test_no_pattern_leaves_out_nothing() -> None:
    exclude = Exclude.of([])
    assert not exclude.file("genindex.html") and not exclude.folder("api")


@pytest.mark.parametrize(
    ("pattern", "says"),
    [("/", "names no file"), ("a//b", "empty part"), ("release-[0-9.html", "no closing ]")],
)
def test_a_pattern_that_cannot_mean_anything_says_why(pattern: str, says: str) -> None:
    with pytest.raises(BadPattern, match=says):
        Exclude.of([pattern])
