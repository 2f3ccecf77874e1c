"""The Typer parameters of `ask`'s options (cli.runtime.options), for the commands that
take them.

`takes_ask_options(command)` gives a command function the options `command` takes as
keyword parameters, by setting the function's `__signature__`, which is where Typer (through
`inspect.signature`) reads a command's parameters. The function takes them as `**options`
and turns them into `AskOptions` with `AskOptions.of`. The function's own parameters come
first; one marked `After(name)` comes right after that option instead (`After.ALL`: after
them all), so a command's help lists its options in the order that reads best. A command
that takes only a few of them (eval, simulate) annotates a parameter with
`ask_option(name, command)`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, TypeVar, get_args, get_origin

import typer

from cli.runtime.options import Command, Declared, Kind, declared_options
from gateway.record import record

F = TypeVar("F", bound=Callable[..., Any])


@record
class After:
    """In a command's own parameter's `Annotated[...]`: list it after the option `name`."""

    name: str
    ALL: ClassVar[After]


After.ALL = After("")


def _info(declared: Declared, command: Command) -> Any:
    spec = declared.spec
    return typer.Option(
        *spec.flags,
        help=spec.help_in(command),
        metavar=spec.metavar,
        count=spec.kind is Kind.COUNT,
        show_default=False,
    )


def parameter(declared: Declared, command: Command) -> inspect.Parameter:
    spec = declared.spec
    info = _info(declared, command)
    value: Any = declared.value_type
    annotation: Any = {
        Kind.FLAG: bool,
        Kind.COUNT: int,
        Kind.VALUE: value | None,
        Kind.MULTI: list[value] | None,
    }[spec.kind]
    default = {Kind.FLAG: False, Kind.COUNT: 0}.get(spec.kind)
    return inspect.Parameter(
        declared.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, info],
    )


def ask_option(name: str, command: Command) -> Any:
    """The Typer option of the declared option `name`, for a command that declares its
    own parameters and takes only a few of `ask`'s (eval, simulate):
    `product: Annotated[str | None, ask_option("product", Command.EVAL)] = None`."""
    (declared,) = (d for d in declared_options(command) if d.name == name)
    return _info(declared, command)


def _after(param: inspect.Parameter) -> After | None:
    if get_origin(param.annotation) is not Annotated:
        return None
    return next((a for a in get_args(param.annotation) if isinstance(a, After)), None)


def takes_ask_options(command: Command) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        own = inspect.signature(fn, eval_str=True)
        first = [
            p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD and _after(p) is None
        ]
        placed = [p for p in own.parameters.values() if _after(p) is not None]
        shared: list[inspect.Parameter] = []
        for declared in declared_options(command):
            shared.append(parameter(declared, command))
            shared.extend(p for p in placed if _after(p) == After(declared.name))
        shared.extend(p for p in placed if _after(p) == After.ALL)
        lost = {p.name for p in placed} - {p.name for p in shared}
        assert not lost, f"{fn.__name__}: {lost} placed after an option {command} lacks"
        keyword = [p.replace(kind=p.KEYWORD_ONLY) for p in shared]
        fn.__signature__ = own.replace(parameters=[*first, *keyword])  # type: ignore[attr-defined]
        return fn

    return decorate
