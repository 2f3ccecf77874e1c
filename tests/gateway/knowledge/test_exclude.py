"""The help-centre walk under articles.exclude: what is left out, and what is not walked."""

from __future__ import annotations

from pathlib import Path

from gateway.knowledge.files import walk


def _site(root: Path) -> Path:
    for name in ("intro.html", "genindex.html", "ref/sql.html", "ref/genindex.html",
                 "release/changelog-15.md", "_static/theme.html"):  # fmt: skip
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<h1>{name}</h1><p>text</p>")
    return root


def _names(root: Path, found: list[str]) -> list[str]:
    return [str(Path(p).relative_to(root)) for p in found]


def test_the_walk_leaves_out_what_the_patterns_match_and_counts_it(tmp_path: Path) -> None:
    root = _site(tmp_path / "site")
    every = walk([root])
    assert len(every.found) == 6 and every.excluded_files == every.excluded_folders == 0
    walked = walk([root], exclude=["genindex.html", "**/changelog*", "_static/"])
    assert _names(root, [f.path for f in walked.found]) == ["intro.html", "ref/sql.html"]
    assert (walked.excluded_files, walked.excluded_folders) == (3, 1)


def test_a_folder_left_out_is_not_walked(tmp_path: Path) -> None:
    root = _site(tmp_path / "site")
    (root / "_static" / "loop").symlink_to(root / "_static")  # walked, it warns of a loop
    assert any("symlink loop" in w for w in walk([root]).warnings)
    assert walk([root], exclude=["_static/"]).warnings == []


def test_a_file_named_itself_is_read_whatever_the_patterns(tmp_path: Path) -> None:
    root = _site(tmp_path / "site")
    walked = walk([root / "genindex.html"], exclude=["genindex.html"])
    assert [f.path for f in walked.found] == [str(root / "genindex.html")]


def test_patterns_match_inside_each_folder_walked(tmp_path: Path) -> None:
    root = _site(tmp_path / "site")
    # From `ref`, `ref/genindex.html` is `genindex.html`: a path pattern is relative to it.
    walked = walk([root / "ref"], exclude=["/genindex.html"])
    assert _names(root, [f.path for f in walked.found]) == ["ref/sql.html"]
