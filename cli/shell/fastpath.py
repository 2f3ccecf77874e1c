"""A plain question parsed without Typer.

Importing and setting up Typer costs about a third of a one-question run, and nearly
every run is just `support-ask "question" -a kb [flags]`. This parser takes exactly that
shape (the options of `ask`, words, `--`) and gives up on anything else (help,
another command or a near miss of one, an unknown or bundled option, a missing value, no
question on a terminal), returning None so Typer parses instead and owns every message.

Its options are those declared in cli.runtime.options, as Typer's `ask` takes them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from cli.runtime.options import AskOptions, Command, Kind, declared_options
from cli.shell import routing
from cli.terminal.diag import is_tty

ASK_OPTIONS = {d.name: d for d in declared_options(Command.ASK)}
_BY_FLAG = {flag: d.name for d in ASK_OPTIONS.values() for flag in d.spec.flags}
# Typer's completion hook announces itself through this variable.
COMPLETION_VAR = "_SUPPORT_ASK_COMPLETE"


def parse_ask(
    args: Sequence[str], *, environ: Mapping[str, str] | None = None, stdin_tty: bool | None = None
) -> AskOptions | None:
    env = os.environ if environ is None else environ
    if COMPLETION_VAR in env:
        return None
    args = list(args)
    if args[:1] == [routing.DEFAULT_COMMAND]:
        args = args[1:]
    elif not routing.routes_to_default(args, routing.command_names()):
        return None

    values: dict[str, Any] = {}
    words: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            words.extend(args[i:])
            break
        if token == "-" or not token.startswith("-"):
            words.append(token)
            continue
        name, eq, attached = token.partition("=")
        if eq and not name.startswith("--"):
            return None  # `-a=kb` means something odd to click: let it say what
        field = _BY_FLAG.get(name)
        if field is None:
            return None  # --help, a bundled -qv, a typo: Typer's job
        kind, convert = ASK_OPTIONS[field].spec.kind, ASK_OPTIONS[field].value_type
        if kind in (Kind.FLAG, Kind.COUNT):
            if eq:
                return None
            values[field] = True if kind is Kind.FLAG else values.get(field, 0) + 1
            continue
        if eq:
            value = attached
        elif i < len(args):
            value = args[i]
            i += 1
        else:
            return None  # a missing value: Typer's usage error
        try:
            converted = convert(value)
        except ValueError:
            return None  # `--budget soon`: Typer's usage error
        if kind is Kind.MULTI:
            values.setdefault(field, []).append(converted)
        else:
            values[field] = converted

    tty = is_tty(sys.stdin) if stdin_tty is None else stdin_tty
    if not words and tty:
        return None  # no question on a terminal: Typer shows the help
    for name, declared in ASK_OPTIONS.items():
        if declared.spec.kind is Kind.MULTI:
            values[name] = tuple(values.get(name, ()))
    return AskOptions(words=tuple(words), **values)
