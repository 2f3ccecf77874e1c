"""Plain coercion for plain parameters: keeps pydantic off the command line's start-up.

Typer (0.2x) coerces every parameter that is not a flag through a pydantic TypeAdapter,
which imports pydantic and builds a schema per parameter: about 50 ms on every run, more
than the rest of support-ask's start-up together. Our parameters are all str, int, float,
Path, bool or lists of them, with no constraints, so they are converted here directly, with the
same results. Any parameter of another shape keeps Typer's own coercion, and if a future
Typer changes these internals, `install` does nothing and Typer's coercion runs as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer import BadParameter, _click

try:
    from typer._coercion import RuntimeParam
except ImportError:  # pragma: no cover - a Typer without the adapter layer
    RuntimeParam = None  # type: ignore[assignment,misc]

_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off", ""})


def _boolean(value: Any) -> bool:
    """A flag's value: a bool already, or a word (from an environment variable)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError(value)


_boolean.__name__ = "boolean"

_LEAVES: dict[Any, Callable[[Any], Any]] = {
    str: str,
    int: int,
    float: float,
    Path: Path,
    bool: _boolean,
}


def _converter(annotation: Any, info: Any) -> tuple[Callable[[Any], Any], bool] | None:
    """(convert one value, is a list) for a plain annotation; None for anything else."""
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None):
        return None
    if getattr(info, "min", None) is not None or getattr(info, "max", None) is not None:
        return None
    if any(getattr(info, flag, False) for flag in ("exists", "resolve_path", "allow_dash")):
        return None
    if getattr(info, "path_type", None) is not None:
        return None
    if get_origin(annotation) is list:
        (leaf,) = get_args(annotation) or (None,)
        convert = _LEAVES.get(leaf)
        return None if convert is None else (convert, True)
    convert = _LEAVES.get(annotation)
    return None if convert is None else (convert, False)


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):
        convert: Callable[[Any], Any] = str
        many: bool = False

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if self.many:
                    items = value if isinstance(value, (list, tuple)) else [value]
                    return [self.convert(item) for item in items]
                return self.convert(value)
            except (TypeError, ValueError):
                name = getattr(self.convert, "__name__", "value")
                raise BadParameter(
                    f"{value!r} is not a valid {name}.", ctx=ctx, param=param
                ) from None


def install_on_params(command: _click.Command, ctx: _click.Context) -> None:
    if RuntimeParam is None:
        return
    # The help option is made on first use and cached; make it now so it is covered too.
    # Its names come from the root context's settings, which every child inherits.
    help_option = command.get_help_option(ctx)
    for param in [*command.params, *([help_option] if help_option else [])]:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or not hasattr(param, "_runtime_param"):
            continue
        if param._runtime_param is not None:
            continue
        found = _converter(descriptor.annotation, descriptor.parameter_info)
        if found is None:
            continue
        convert, many = found
        param._runtime_param = PlainParam(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            convert=convert,
            many=many,
        )


def install(command: _click.Command, ctx: _click.Context) -> None:
    """Plain coercion on `command` and, for a group, every command under it (those built
    so far: a lazily built command gets it when it is built)."""
    install_on_params(command, ctx)
    for sub in getattr(command, "commands", {}).values():
        install(sub, ctx)
