"""The project's import graph, read from the source with `ast` (nothing is imported).

Every import counts, at the top of a module or inside a function, except those under
`if TYPE_CHECKING:`, which never run: a lazy import still ties two modules together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO

PACKAGES = ("gateway", "cli", "prompts")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path

    @property
    def lines(self) -> int:
        return len(self.path.read_text().splitlines())

    @property
    def docstring(self) -> str:
        return ast.get_docstring(ast.parse(self.path.read_text())) or ""


def modules() -> dict[str, Module]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(parts)
            out[name] = Module(name, path)
    return out


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from (n for o in node.orelse for n in _runtime_imports_of(o))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    yield from _runtime_imports(node)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def graph() -> dict[str, set[str]]:
    """Each first-party module and the first-party modules it imports."""
    known = modules()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, module in known.items():
        for node in _runtime_imports(ast.parse(module.path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                # `from gateway.engine import policy` imports the module policy
                targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
                targets = targets or [base]
            for target in targets:
                found = resolve(target)
                if found is not None and found != name:
                    edges[name].add(found)
    return edges
