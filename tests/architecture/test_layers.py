"""The layout keeps its shape: no import circles, no import from a lower layer up, and no
module so long that it must be holding more than one thing.

The layers, lowest first. A module may import its own layer and those below it.
"""

from __future__ import annotations

import pytest

from tests.architecture.imports import graph, modules

LAYERS: tuple[tuple[str, ...], ...] = (
    # the vocabulary every part speaks (and the record type its values are made of), what a
    # secret looks like and a key as held
    (
        "gateway.record",
        "gateway.model",
        "gateway.units",
        "gateway.clock",
        "gateway.seams",
        "gateway.secrets.shapes",
        "gateway.secrets.key",
    ),
    # rules over that vocabulary: configuration, classification, counting, the run's
    # secrets cut out of what it writes, what an answer is made of (masking the customer's
    # data, their language, the thread, what it means to a script), and what each failure
    # kind means (the engine's table, which the classifier reads too)
    (
        "gateway.config",
        "gateway.classify",
        "gateway.engine.table",
        "gateway.tokens",
        "gateway.secrets",
        "prompts",
        "gateway.answers",
    ),
    # the parts the engine is built against
    ("gateway.state", "gateway.limits", "gateway.knowledge", "gateway.providers"),
    ("gateway.engine",),
    # what runs the engine: backlogs, fault injection, what happened afterwards
    ("gateway.batch", "gateway.simulate", "gateway.observe"),
    ("gateway",),
    # the command line: what every command runs on and shows, the commands, the shell
    ("cli.terminal", "cli.runtime"),
    ("cli.commands",),
    ("cli.shell", "cli"),
)

LONG = 600  # lines; a longer module says why in its docstring ("... is long because ...")

# Left over from before the layout, each to be taken apart (and then struck off here):
# nothing is left.
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_LONG: set[str] = set()


def layer(module: str) -> int:
    best, rank = "", -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, rank = name, i
    if rank < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return rank


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_import_runs_from_a_lower_layer_up() -> None:
    upward = [
        f"{name} ({layer(name)}) imports {target} ({layer(target)})"
        for name, targets in sorted(graph().items())
        for target in sorted(targets)
        if layer(target) > layer(name) and (name, target) not in KNOWN_UPWARD
    ]
    assert upward == []


def test_there_is_no_import_circle() -> None:
    edges = graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)
    assert [" -> ".join(c) for c in circles] == []


@pytest.mark.parametrize("name", sorted(modules()))
def test_a_long_module_says_why(name: str) -> None:
    module = modules()[name]
    if module.lines > LONG and name not in KNOWN_LONG:
        assert "is long because" in module.docstring, f"{name}: {module.lines} lines"


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    # The graph really holds the edges the checks look for: cli.shell.app imports the
    # runtime's guard, and nothing in the gateway imports the command line.
    edges = graph()
    assert "cli.runtime.guard" in edges["cli.shell.app"]
    assert all(
        not t.startswith("cli") for n, ts in edges.items() if n.startswith("gateway") for t in ts
    )
