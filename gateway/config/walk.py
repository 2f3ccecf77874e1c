"""The YAML walk: a composed YAML tree read node by node, every problem named with its
file:line and key path (`deployments[1].context_window`).

The YAML is composed to nodes rather than loaded to dicts so that every value keeps its
line. `Walk` reads the shapes (mappings, with merge keys and repeated keys; lists) and the
scalars (text, whole numbers, numbers, true/false, paths), and keeps the problems; what a
section of the config means is `sections` and `deployments`. Imported only to validate,
with yaml inside the functions that need it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from gateway.config.model import ConfigError
from gateway.secrets.shapes import CREDENTIAL_FIELDS, PLACEHOLDER, looks_like_a_key

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from yaml import Node
    from yaml.constructor import SafeConstructor

    Pair = tuple[Node, Node]

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)

INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"
MERGE = "tag:yaml.org,2002:merge"


class Echo(ConfigError):
    """A problem already reported in other words (a required key missing because it was
    misspelt, and the misspelling's message named it): not reported twice."""


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Walk:
    """One file's composed YAML tree, read node by node, every problem named with its line.

    A check fails at its first problem (`fail` raises); the parts of a file that do not
    depend on each other (each top-level section, each deployment, each of its fields, each
    policy value) are checked through `gather`, which keeps the problem and goes on, so one
    run reports every problem of the file at once.
    """

    def __init__(self, source: str, loader: SafeConstructor, base_dir: Path) -> None:
        self.source = source
        self.loader = loader
        self.base_dir = base_dir
        self.key_lines: dict[int, int] = {}  # id(collection value node) -> its key's line
        self.problems: list[ConfigError] = []
        self.suggested: set[str] = set()  # key paths a misspelt key was told it may mean

    # -- errors

    def problem(self, node: Node, key: str | None, message: str) -> ConfigError:
        line = self.key_lines.get(id(node))
        if line is None and node.start_mark is not None:
            line = node.start_mark.line
        return ConfigError(
            message, file=self.source, line=None if line is None else line + 1, key=key
        )

    def fail(self, node: Node, key: str | None, message: str) -> NoReturn:
        raise self.problem(node, key, message)

    def note(self, node: Node, key: str | None, message: str) -> None:
        """A problem that does not stop the check of what follows."""
        self.problems.append(self.problem(node, key, message))

    def gather(self, default: T, check: Callable[[], T]) -> T:
        """`check()`, or `default` with its problem kept for the report."""
        try:
            return check()
        except Echo:
            return default
        except ConfigError as exc:
            self.problems.append(exc)
            return default

    def describe(self, node: Node, *, secret: bool = False) -> str:
        """What the user wrote, in words; `secret` values are never echoed."""
        from yaml import MappingNode, SequenceNode

        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        kind = {
            NULL: "nothing (null)",
            BOOL: "a true/false value",
            INT: "a whole number",
            FLOAT: "a number",
        }.get(node.tag, "text")
        shown = str(node.value)
        if secret or node.tag == NULL or looks_like_a_key(shown):
            return kind
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{kind} {shown!r}"

    # -- shapes

    def pairs(self, node: Node, path: str, *, fold: Callable[[str], str] = str) -> list[Pair]:
        """A mapping's (key, value) nodes, merge keys applied (an explicit key overrides a
        merged one, as in YAML); a key written twice is an error, not a silent override."""
        from yaml import MappingNode, ScalarNode, SequenceNode

        if not isinstance(node, MappingNode):
            self.fail(node, path or None, f"expected a mapping, got {self.describe(node)}")
        first: dict[str, Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode):
                self.fail(key_node, path or None, "a key must be plain text")
            if key_node.tag == MERGE:
                continue
            key = fold(str(key_node.value))
            if key in first:
                line = first[key].start_mark.line + 1
                self.note(
                    key_node,
                    join(path, str(key_node.value)),
                    f"given twice (first on line {line}); keep one",
                )
                continue
            first[key] = key_node
        self.loader.flatten_mapping(node)  # YAML merge keys (<<: *defaults), merged first
        latest: dict[str, Pair] = {}
        for key_node, value_node in node.value:
            if isinstance(value_node, MappingNode | SequenceNode):
                # A block value starts below its key; errors about it point at the key.
                self.key_lines[id(value_node)] = key_node.start_mark.line
            latest[fold(str(key_node.value))] = (key_node, value_node)
        return list(latest.values())

    def mapping(
        self,
        node: Node,
        path: str,
        allowed: Iterable[str],
        *,
        where: str = "",
        nested: Iterable[str] = (),
    ) -> dict[str, Pair]:
        """A mapping's entries by key: unknown and repeated keys are errors. A key of
        `nested` is one that belongs in a nested `policy:` mapping, and its error says so."""
        allowed = tuple(allowed)
        out: dict[str, Pair] = {}
        for key_node, value_node in self.pairs(node, path):
            key = str(key_node.value)
            if key not in allowed:
                shown = PLACEHOLDER if looks_like_a_key(key) else key
                message = self.unknown_key(key, allowed, where, path, nested=tuple(nested))
                self.note(key_node, join(path, shown), message)
                continue
            out[key] = (key_node, value_node)
        return out

    def unknown_key(
        self, key: str, allowed: tuple[str, ...], where: str, path: str, *, nested: tuple[str, ...]
    ) -> str:
        import difflib

        shown = "(not shown: it looks like an API key)" if looks_like_a_key(key) else repr(key)
        message = f"unknown key {shown}{where}"
        if key in nested:
            return f"{message}; policy overrides go in a nested mapping: `policy: {{{key}: ...}}`"
        if key.lower() in CREDENTIAL_FIELDS:
            return (
                f"{message}; API keys never go in the config: put the key in an environment "
                "variable and name that variable with api_key_env"
            )
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if close:
            self.suggested.add(join(path, close[0]))
        return f"{message}{hint}; valid keys: {', '.join(allowed)}"

    def required(self, entries: dict[str, Pair], key: str, node: Node, path: str) -> Node:
        if key not in entries:
            if join(path, key) in self.suggested:
                raise Echo(f"{key} missing", file=self.source)  # the misspelling said it
            self.fail(node, join(path, key), "missing; this key is required")
        return entries[key][1]

    # -- scalars

    def is_null(self, node: Node) -> bool:
        from yaml import ScalarNode

        return isinstance(node, ScalarNode) and node.tag == NULL

    def text(self, node: Node, path: str, *, secret: bool = False) -> str:
        """Text as written: an unquoted 2024-10-21 or 1.5 stays the characters typed."""
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag == NULL:
            self.fail(node, path, f"expected text, got {self.describe(node, secret=secret)}")
        value = str(node.value)
        if not value.strip():
            self.fail(node, path, "must not be empty")
        return value

    def optional_text(self, node: Node | None, path: str, *, secret: bool = False) -> str | None:
        if node is None or self.is_null(node):
            return None
        return self.text(node, path, secret=secret)

    def integer(self, node: Node, path: str, *, minimum: int, maximum: int | None = None) -> int:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != INT:
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a whole number, got {self.describe(node)}{hint}")
        value = self.loader.construct_object(node)
        assert isinstance(value, int)
        if maximum is not None and not minimum <= value <= maximum:
            self.fail(node, path, f"must be from {minimum} to {maximum}, got {value}")
        if value < minimum:
            self.fail(node, path, f"must be at least {minimum}, got {value}")
        return value

    def number(self, node: Node, path: str, *, minimum: float, above: bool = False) -> float:
        """A float; whole numbers welcome. `above` makes the minimum exclusive."""
        import math

        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag not in (INT, FLOAT):
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a number, got {self.describe(node)}{hint}")
        value = float(self.loader.construct_object(node))
        if not math.isfinite(value):
            self.fail(node, path, f"must be a finite number, got {node.value}")
        if value < minimum or (above and value == minimum):
            bound = "greater than" if above else "at least"
            self.fail(node, path, f"must be {bound} {minimum:g}, got {value:g}")
        return value

    def boolean(self, node: Node, path: str) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != BOOL:
            self.fail(node, path, f"expected true or false, got {self.describe(node)}")
        return bool(self.loader.construct_object(node))

    def choice(self, node: Node, path: str, among: type[E], *, hint: str = "") -> E:
        """One of a closed set's values, as written (`hint`: what a choice means, said
        after the values when the text is none of them)."""
        from yaml import ScalarNode

        valid = [member.value for member in among]
        # `off`, `no` and the like are YAML's booleans: never a value, whatever they read as.
        if not isinstance(node, ScalarNode) or node.tag == BOOL or node.value not in valid:
            got = self.describe(node)
            self.fail(node, path, f"expected one of {', '.join(valid)}, got {got}{hint}")
        return among(node.value)

    def path_value(self, node: Node | None, path: str) -> Path | None:
        text = self.optional_text(node, path)
        if text is None:
            return None
        return self.base_dir / Path(text).expanduser()

    def _quoted_number(self, node: Node) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            return False
        try:
            float(str(node.value))
        except ValueError:
            return False
        return True
