"""Every use of Typer's private insides, in one place, each with the reason it is worth it.

Typer's public API (``typer.Typer``, ``typer.Option``, ``typer.Argument``, ``cls=`` with
``typer.core.TyperGroup``, ``typer.main.get_command``) builds the whole command line. Three
things it does cost a user something, and only its insides can change them:

1. **Coercion through pydantic.** Typer (0.2x) converts every parameter that is not a flag
   through a pydantic ``TypeAdapter``: importing pydantic and building a schema per parameter
   is about 50 ms a run, more than the rest of start-up together. Our parameters are str,
   int, float, Path, bool, an Enum, or lists of them, without constraints, so they are
   converted here directly with the same results; any other shape keeps Typer's coercion.
2. **Argument labels.** Typer writes an argument as ``QUESTION <list[str]>`` in help and
   ``{questions}`` in the usage line: text a user cannot act on. Arguments here read as
   click writes them (``QUESTION...``, ``[NAME]``); there is no public knob for it.
3. **Option labels.** An option without a ``metavar`` is labelled with its Python type
   (``--since <str>``); it gets click's name for it instead (TEXT, INTEGER, NUMBER, PATH).
   Setting ``metavar`` is public; reading the parameter's annotation to choose it is not.

Click itself is vendored by this Typer as ``typer._click``; ``click`` below is the one name
the rest of the command line uses for it.

What this relies on is listed by `missing()`. At run time a missing piece leaves Typer's own
behaviour (slower, or with Typer's labels, but correct), so a user never breaks on an upgrade;
``tests/cli/shell/test_typer_internals.py`` fails loudly instead, naming what changed, and
pyproject.toml pins Typer to the minor version these were read from.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
import typer.main
from typer import BadParameter, core
from typer import _click as click

try:
    from typer._coercion import RuntimeParam
    from typer._param_types import coerce_cli_choice
except ImportError:  # pragma: no cover - a Typer without the adapter layer
    RuntimeParam = None  # type: ignore[assignment,misc]

__all__ = ["adapt", "click", "missing", "show_usage_error"]

# The attributes of Typer's parameter classes read or shadowed below.
_ARGUMENT_ATTRIBUTES = ("_usage_display_name", "_rich_display_name", "display_type_rich")
_PARAM_ATTRIBUTES = ("type_descriptor", "_runtime_param")


def missing() -> list[str]:
    """The private pieces of Typer this module relies on that this Typer lacks."""
    from typer import rich_utils  # imports rich: only a check or a rich error needs it

    gone = [] if RuntimeParam is not None else ["typer._coercion.RuntimeParam"]
    if RuntimeParam is not None and not callable(getattr(RuntimeParam, "_coerce_value", None)):
        gone.append("RuntimeParam._coerce_value")
    gone += [
        f"TyperArgument.{name}"
        for name in _ARGUMENT_ATTRIBUTES
        if not hasattr(core.TyperArgument, name)
    ]
    if not callable(getattr(rich_utils, "rich_format_error", None)):
        gone.append("typer.rich_utils.rich_format_error")
    probe = typer.Typer()

    @probe.command()
    def _probe(word: str, flag: str = "") -> None:  # pragma: no cover - never run
        pass

    command = typer.main.get_command(probe)
    for param in command.params:
        gone += [
            f"{type(param).__name__}.{name}"
            for name in _PARAM_ATTRIBUTES
            if not hasattr(param, name)
        ]
    return sorted(set(gone))


def adapt(command: click.Command, ctx: click.Context) -> None:
    """Plain coercion and click's labels on `command` and, for a group, on every command
    under it built so far (a lazily built one is adapted when it is built)."""
    help_option = command.get_help_option(ctx)  # made on first use; make it now to cover it
    for param in [*command.params, *([help_option] if help_option else [])]:
        _coerce_plainly(param)
        kind = getattr(param, "param_type_name", None)
        if kind == "argument":
            _label_argument(param)
        elif kind == "option" and param.metavar is None and not _takes_no_value(param):
            param.metavar = _value_name(param)
    for sub in getattr(command, "commands", {}).values():
        adapt(sub, ctx)


def show_usage_error(exc: click.ClickException, *, rich: bool) -> None:
    """A usage error on stderr as Typer itself would show it in this markup mode."""
    if not rich:
        exc.show()
        return
    from typer import rich_utils

    rich_utils.rich_format_error(exc)


# 1. Coercion ---------------------------------------------------------------------------

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


class _NotAChoice(ValueError):
    """A value that is none of an Enum's choices; its message is the whole reason."""


def _enum(kind: type[enum.Enum], case_sensitive: bool) -> Callable[[Any], Any]:
    """A choice by its value, matched as Typer matches it (its own function, which needs
    no pydantic), and said as Typer says it, without pydantic's "Value error, " prefix."""

    def convert(value: Any) -> Any:
        try:
            return coerce_cli_choice(value, choices=list(kind), case_sensitive=case_sensitive)
        except ValueError as exc:
            raise _NotAChoice(str(exc)) from None

    return convert


def _leaf(annotation: Any, info: Any) -> Callable[[Any], Any] | None:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum(annotation, bool(getattr(info, "case_sensitive", True)))
    return _LEAVES.get(annotation)


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
        convert = _leaf(leaf, info)
        return None if convert is None else (convert, True)
    convert = _leaf(annotation, info)
    return None if convert is None else (convert, False)


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainParam(RuntimeParam):
        convert: Callable[[Any], Any] = str
        many: bool = False

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if self.many:
                    items = value if isinstance(value, (list, tuple)) else [value]
                    return [self.convert(item) for item in items]
                return self.convert(value)
            except _NotAChoice as exc:
                raise BadParameter(str(exc), ctx=ctx, param=param) from None
            except (TypeError, ValueError):
                name = getattr(self.convert, "__name__", "value")
                raise BadParameter(
                    f"{value!r} is not a valid {name}.", ctx=ctx, param=param
                ) from None


def _coerce_plainly(param: Any) -> None:
    descriptor = getattr(param, "type_descriptor", None)
    if RuntimeParam is None or descriptor is None or not hasattr(param, "_runtime_param"):
        return
    if param._runtime_param is not None:
        return
    found = _converter(descriptor.annotation, descriptor.parameter_info)
    if found is None:
        return
    convert, many = found
    param._runtime_param = _PlainParam(
        parameter_info=descriptor.parameter_info,
        annotation=descriptor.annotation,
        convert=convert,
        many=many,
    )


# 2 and 3. Labels -------------------------------------------------------------------------

_NAMES: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}


def _value_name(param: Any) -> str:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    return _NAMES.get(annotation, "VALUE")


def _label_argument(param: Any) -> None:
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
