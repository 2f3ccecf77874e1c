"""Each option of `ask` declared once: `AskOptions`, whose fields say how they are typed.

A field that is an option is made by `option(...)`, which keeps its flags, help, metavar,
kind and the commands that take it in the field's metadata. Everything else is derived
from that one declaration: the Typer parameters of `ask` and `batch`
(cli.runtime.option_params), the fast path's parser (cli.shell.fastpath), and turning
either's values into an `AskOptions`. A new option is one field here.

The fast path reads this module on every plain question, so it imports nothing heavy
(no Typer). It does not use `from __future__ import annotations` either: a field's type
is read at run time (the type of a value, for the parsers), so it must be the type itself.
"""

import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any, get_args

from cli.runtime.common import CONFIG_HELP, STATE_HELP
from gateway.record import field, fields, record


class Kind(Enum):
    FLAG = "flag"  # --json: True when present
    COUNT = "count"  # -v, -v -v
    VALUE = "value"  # --config PATH: the last one wins
    MULTI = "multi"  # --articles PATH, repeatable


class Command(Enum):
    """The commands that take options of `ask` (eval and simulate only a few)."""

    ASK = "ask"
    BATCH = "batch"
    EVAL = "eval"
    SIMULATE = "simulate"


BOTH = frozenset({Command.ASK, Command.BATCH})
ASK_ONLY = frozenset({Command.ASK})
# What every command that asks sends: the same passages, for the same product.
EVERY = frozenset(Command)

_DEFAULTS: Mapping[Kind, object] = {
    Kind.FLAG: False,
    Kind.COUNT: 0,
    Kind.VALUE: None,
    Kind.MULTI: (),
}
_SPEC = "support_ask.option"


@record
class Spec:
    """How one option is typed on the command line."""

    flags: tuple[str, ...]
    help: str
    kind: Kind
    metavar: str | None
    commands: frozenset[Command]
    # A command's own wording of the help, where the option does more there (batch's -q).
    help_for: Mapping[Command, str]

    def help_in(self, command: Command) -> str:
        return self.help_for.get(command, self.help)


def option(
    *flags: str,
    help: str,
    kind: Kind = Kind.VALUE,
    metavar: str | None = None,
    commands: frozenset[Command] = BOTH,
    help_for: Mapping[Command, str] | None = None,
) -> Any:
    """A field of `AskOptions` that is an option (its default follows from its kind)."""
    spec = Spec(flags, help, kind, metavar, commands, dict(help_for or {}))
    return field(default=_DEFAULTS[kind], metadata={_SPEC: spec})


ARTICLES_HELP = "An article file or a folder of them (read recursively); repeatable."
LOG_HELP = "The attempt log file (else $SUPPORT_ASK_LOG, the config's log.path, the user log dir)."
PRODUCT_HELP = "The product name the prompt uses."
MAX_ARTICLE_TOKENS_HELP = (
    "The passages sent per question, in tokens (else the config's articles.max_tokens); "
    "`all` sends every article whole."
)


@record
class AskOptions:
    """What `ask` was told, and `batch` for each of its questions."""

    words: tuple[str, ...] = ()
    articles: tuple[Path, ...] = option(
        "--articles", "-a", kind=Kind.MULTI, metavar="PATH", help=ARTICLES_HELP
    )
    config: Path | None = option("--config", "-c", metavar="FILE", help=CONFIG_HELP)
    state: str | None = option("--state", metavar="FILE|URL", help=STATE_HELP)  # or redis://
    product: str | None = option("--product", metavar="NAME", help=PRODUCT_HELP, commands=EVERY)
    json: bool = option(
        "--json",
        kind=Kind.FLAG,
        commands=ASK_ONLY,
        help="Print one JSON object (answer, attempts).",
    )
    stream: bool = option(
        "--stream",
        kind=Kind.FLAG,
        commands=ASK_ONLY,
        help="Write the answer as it arrives (JSON Lines with --json).",
    )
    allow_restart: bool = option(
        "--allow-restart",
        kind=Kind.FLAG,
        commands=ASK_ONLY,
        help="With --stream --json: when a stream breaks after text, emit a restart "
        "event and stream the next attempt from its beginning.",
    )
    quiet: bool = option(
        "--quiet",
        "-q",
        kind=Kind.FLAG,
        help="Say nothing on stderr but errors.",
        help_for={
            Command.BATCH: "No progress bar or warnings: periodic one-line summaries, and "
            "the summary at the end."
        },
    )
    show_attempts: bool = option(
        "--show-attempts",
        kind=Kind.FLAG,
        commands=ASK_ONLY,
        help="Print the attempts table even when stderr is not a terminal.",
    )
    verbose: int = option("--verbose", "-v", kind=Kind.COUNT, help="Log each attempt (-vv: debug).")
    debug: bool = option(
        "--debug",
        kind=Kind.FLAG,
        help="Debug and HTTP logs (keys redacted); tracebacks for internal errors.",
    )
    log: Path | None = option("--log", metavar="FILE", help=LOG_HELP)
    no_log: bool = option("--no-log", kind=Kind.FLAG, help="Do not append to the attempt log.")
    deployments: tuple[str, ...] = option(
        "--deployment",
        "-d",
        kind=Kind.MULTI,
        metavar="NAME",
        help="Use only this deployment; repeatable (tried in the config's order).",
    )
    budget: float | None = option(
        "--budget", metavar="SECONDS", help="Seconds for the whole question (else policy.budget)."
    )
    timeout: float | None = option(
        "--timeout", metavar="SECONDS", help="Seconds for one attempt (else policy.timeout)."
    )
    max_article_tokens: str | None = option(
        "--max-article-tokens", metavar="N|all", help=MAX_ARTICLE_TOKENS_HELP, commands=EVERY
    )
    thread: str | None = option(
        "--thread",
        metavar="FILE|-",
        commands=ASK_ONLY,
        help="The chat so far: a JSON list of {role: customer|agent, content}, oldest "
        "first (- reads stdin). The question is the argument, else its last customer "
        "message.",
    )
    language: str | None = option(
        "--language",
        metavar="CODE",
        help="Reply in this language (ISO 639-1, e.g. de), whatever the customer wrote in.",
    )
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @classmethod
    def of(cls, command: Command, values: Mapping[str, Any], **rest: Any) -> "AskOptions":
        """From a parser's values (a repeatable option's list, or None when never given),
        the options `command` does not take at their defaults."""
        taken = {}
        for declared in declared_options(command):
            value = values[declared.name]
            if declared.spec.kind is Kind.MULTI:
                value = tuple(value or ())
            taken[declared.name] = value
        return cls(**taken, **rest)


@record
class Declared:
    """One option as the parsers see it: its field, its spec, the type of one value."""

    name: str
    spec: Spec
    value_type: type


def declared_options(command: Command) -> tuple[Declared, ...]:
    """The options `command` takes, in the order they are declared (and listed in help)."""
    return tuple(
        Declared(f.name, f.metadata[_SPEC], _value_type(f.type))
        for f in fields(AskOptions)
        if _SPEC in f.metadata and command in f.metadata[_SPEC].commands
    )


def _value_type(annotation: Any) -> type:
    """The type of one value: `Path` of `Path | None` and of `tuple[Path, ...]`."""
    if isinstance(annotation, UnionType):
        (annotation,) = (a for a in get_args(annotation) if a is not type(None))
    elif get_args(annotation):
        annotation = get_args(annotation)[0]
    assert isinstance(annotation, type), annotation
    return annotation
