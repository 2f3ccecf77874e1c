"""The README's map of where each part lives matches the tree: every package of gateway/
and cli/, and every module directly under gateway/, is named there, and nothing it names
is missing from the tree."""

from __future__ import annotations

import re

from tests.support.paths import REPO

_TOP = ("gateway", "cli")


def _map() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("Where each part lives")
    block = re.search(r"```text\n(.*?)```", readme[start:], re.DOTALL)
    assert block, "the README's map is a ```text block after 'Where each part lives'"
    return block.group(1).splitlines()


def _named() -> set[str]:
    """`gateway/engine`, `gateway/units.py`, ...: the folders and modules the map names,
    each under the top folder whose entry it is indented beneath."""
    named: set[str] = set()
    top = ""
    for line in _map():
        entry = re.match(r"^(\s*)([a-z_][\w/.,\s]*?)(?:\s{2,}|$)", line)
        if not entry or not entry.group(2).strip():
            continue
        indent, text = entry.groups()
        if not indent:
            top = text.strip().rstrip("/")
            named.add(top)
            continue
        if top not in _TOP or len(indent) != 2:
            continue
        for word in re.split(r"[,\s]+", text.strip()):
            if word:
                named.add(f"{top}/{word.rstrip('/')}")
    return named


def _tree() -> set[str]:
    found: set[str] = set()
    for top in _TOP:
        for child in (REPO / top).iterdir():
            package = child.is_dir() and (child / "__init__.py").exists()
            module = top == "gateway" and child.suffix == ".py" and child.name != "__init__.py"
            if package or module:
                found.add(f"{top}/{child.name}")
    return found


def test_the_readme_map_names_every_part_of_the_tree() -> None:
    named = _named()
    assert not _tree() - named, f"in the tree, not in the README's map: {_tree() - named}"


def test_the_readme_map_names_nothing_the_tree_lacks() -> None:
    named = {n for n in _named() if "/" in n and n.split("/")[0] in _TOP}
    assert not named - _tree(), f"in the README's map, not in the tree: {named - _tree()}"
