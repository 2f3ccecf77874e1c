"""Parameter names in help as click writes them: `--since TEXT`, `QUESTION...`, `QUESTIONS`.

Typer 0.2x labels each value with its Python type (`--since <str>`, `QUESTION
<list[str]>`, `--articles <list[Path]>`) and writes a required argument as `{questions}`
in the usage line: text a user cannot act on. Options without a metavar get click's
names (TEXT, INTEGER, NUMBER, PATH); arguments read as their upper-case name, with `...`
when they take several. It reads Typer's parameter classes only through attributes it
checks for, so a future Typer without them keeps its own labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

from typer import _click

_NAMES: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}


def _value_name(param: Any) -> str:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    return _NAMES.get(annotation, "VALUE")


def _argument(param: Any) -> None:
    name = param.metavar or (param.name or "value").upper()
    param.metavar = name
    many = "..." if param.nargs != 1 else ""

    def usage() -> str:
        return f"{name}{many}" if param.required else f"[{name}]{many}"

    def rich_name() -> str:
        return f"{name}{many}"

    # Instance attributes shadow Typer's methods for this parameter only.
    if hasattr(param, "_usage_display_name"):
        param._usage_display_name = usage
    if hasattr(param, "_rich_display_name"):
        param._rich_display_name = rich_name
    if hasattr(param, "display_type_rich"):
        param.display_type_rich = lambda ctx: None


def _takes_no_value(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "count", False))


def readable(command: _click.Command) -> None:
    """Click's names on `command`'s parameters and, for a group, on those of its commands."""
    for param in command.params:
        kind = getattr(param, "param_type_name", None)
        if kind == "argument":
            _argument(param)
        elif kind == "option" and param.metavar is None and not _takes_no_value(param):
            param.metavar = _value_name(param)
    for sub in getattr(command, "commands", {}).values():
        readable(sub)
