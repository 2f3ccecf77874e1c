"""The config's shared allowances: a deployment's `limits:` and the `keys:` section, where
each key variable may set its own. Imported only to validate."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from gateway.config.model import Limits
from gateway.config.walk import Walk, join
from gateway.record import fields

if TYPE_CHECKING:
    from yaml import Node

LIMITS_KEYS = tuple(f.name for f in fields(Limits))
_KEY_KEYS = ("limits",)
_EXAMPLE = "e.g. `limits: {rpm: 500, tpm: 200000, concurrent: 20}`"


def read_limits(w: Walk, node: Node | None, path: str) -> Limits | None:
    """`{rpm, tpm, concurrent, fleet_size}`: whole numbers of at least 1, at least one given
    (an allowance that says nothing is a mistake, not a choice). `fleet_size` alone limits
    nothing configured: it is the share of the provider's stated limits each process keeps
    to with the shared store out of reach."""
    if node is None or w.is_null(node):
        return None
    from yaml import MappingNode

    if not isinstance(node, MappingNode):
        w.fail(node, path, f"expected a mapping, got {w.describe(node)}; {_EXAMPLE}")
    entries = w.mapping(node, path, LIMITS_KEYS, where=" in limits")
    values: dict[str, int] = {}
    for key, (_, value) in entries.items():
        if not w.is_null(value):
            values[key] = w.gather(1, partial(w.integer, value, join(path, key), minimum=1))
    if not values:
        w.fail(node, path, f"limits nothing: give rpm, tpm, concurrent or fleet_size; {_EXAMPLE}")
    return Limits(**values)


def read_keys(w: Walk, node: Node) -> tuple[tuple[str, Limits], ...]:
    """`keys: {VARIABLE: {limits: ...}}`: each key variable's own allowance."""
    from yaml import MappingNode

    if not isinstance(node, MappingNode):
        w.fail(
            node,
            "keys",
            f"expected a mapping of key variable to its settings, got {w.describe(node)}; "
            "e.g. `keys: {OPENAI_API_KEY: {limits: {rpm: 500}}}`",
        )
    out: list[tuple[str, Limits]] = []
    for key_node, value_node in w.pairs(node, "keys"):
        variable = w.text(key_node, "keys", secret=True)
        path = join("keys", variable)
        if w.is_null(value_node):
            continue
        if not isinstance(value_node, MappingNode):
            w.fail(value_node, path, f"expected a mapping, got {w.describe(value_node)}")
        entries = w.mapping(value_node, path, _KEY_KEYS, where=" in a key's settings")
        if "limits" in entries:
            limits = w.gather(None, partial(read_limits, w, entries["limits"][1], f"{path}.limits"))
            if limits is not None:
                out.append((variable, limits))
    return tuple(out)
