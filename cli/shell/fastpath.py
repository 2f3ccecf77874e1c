"""A plain question parsed without Typer.

Importing and setting up Typer costs about a third of a one-question run, and nearly
every run is just `support-ask "question" -a kb [flags]`. This parser takes exactly that
shape (the `ask` options below, words, `--`) and gives up on anything else (help,
another command or a near miss of one, an unknown or bundled option, a missing value, no
question on a terminal), returning None so Typer parses instead and owns every message.

`ASK_OPTIONS` must match the Typer `ask` command's options; a test compares the two.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from cli.commands.ask import AskOptions
from cli.shell import routing
from cli.terminal.diag import is_tty


class Kind(Enum):
    FLAG = "flag"  # --json: True when present
    COUNT = "count"  # -v, -v -v
    VALUE = "value"  # --config PATH: the last one wins
    MULTI = "multi"  # --articles PATH, repeatable


# field of AskOptions -> (its flags, kind, type of a value)
ASK_OPTIONS: Mapping[str, tuple[tuple[str, ...], Kind, type]] = {
    "articles": (("--articles", "-a"), Kind.MULTI, Path),
    "config": (("--config", "-c"), Kind.VALUE, Path),
    "state": (("--state",), Kind.VALUE, str),  # a path or a redis:// URL
    "product": (("--product",), Kind.VALUE, str),
    "json": (("--json",), Kind.FLAG, bool),
    "stream": (("--stream",), Kind.FLAG, bool),
    "allow_restart": (("--allow-restart",), Kind.FLAG, bool),
    "quiet": (("--quiet", "-q"), Kind.FLAG, bool),
    "show_attempts": (("--show-attempts",), Kind.FLAG, bool),
    "verbose": (("--verbose", "-v"), Kind.COUNT, int),
    "debug": (("--debug",), Kind.FLAG, bool),
    "log": (("--log",), Kind.VALUE, Path),
    "no_log": (("--no-log",), Kind.FLAG, bool),
    "deployments": (("--deployment", "-d"), Kind.MULTI, str),
    "budget": (("--budget",), Kind.VALUE, float),
    "timeout": (("--timeout",), Kind.VALUE, float),
    "max_article_tokens": (("--max-article-tokens",), Kind.VALUE, str),
}

_BY_FLAG = {flag: field for field, (flags, _, _) in ASK_OPTIONS.items() for flag in flags}
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
        _, kind, convert = ASK_OPTIONS[field]
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
    for many in ("articles", "deployments"):
        values[many] = tuple(values.get(many, ()))
    return AskOptions(words=tuple(words), **values)
