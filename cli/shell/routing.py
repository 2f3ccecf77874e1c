"""Which command an argument list is for, decided without Typer.

Both the Typer group (cli.shell.group) and the fast path (cli.shell.fastpath) ask these questions,
so `support-ask billing` and `support-ask simulat` mean the same on either path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

DEFAULT_COMMAND = "ask"

# Built only when named (or for --help): command name -> module with register(app).
LAZY_COMMANDS = {
    "simulate": "cli.commands.simulate_cmd",
    "cooldowns": "cli.commands.cooldowns_cmd",
    "config": "cli.commands.config_cmd",
    "stats": "cli.commands.stats_cmd",
    "eval": "cli.commands.eval_cmd",
    "batch": "cli.commands.batch_cmd",
    "index": "cli.commands.index_cmd",
}

# Options the group itself takes; any other leading option belongs to `ask`.
GROUP_OPTIONS = frozenset(
    {"-h", "--help", "--version", "--install-completion", "--show-completion"}
)

_BARE_WORD = re.compile(r"[a-z][a-z0-9_-]*\Z")
# Stricter than difflib's default 0.6: a one-word question must be really close to a
# command name (`simulat`, `cooldown`, `confg`) before it is treated as a typo.
TYPO_CUTOFF = 0.75


def command_names() -> list[str]:
    return [DEFAULT_COMMAND, *LAZY_COMMANDS]


def looks_like_typo(word: str, names: Iterable[str]) -> bool:
    """One bare lowercase word close to a command name: `simulat`, `cooldown`."""
    if not _BARE_WORD.match(word):
        return False
    from difflib import get_close_matches

    return bool(get_close_matches(word, list(names), n=1, cutoff=TYPO_CUTOFF))


HELP_WORD = "help"


def help_request(args: Sequence[str], names: Iterable[str]) -> list[str] | None:
    """`help` alone or `help COMMAND` means the help, not a question to an LLM: the
    command whose help is wanted ([] for the whole tool), else None. `help me reset my
    password` stays a question."""
    if not args or args[0] != HELP_WORD or len(args) > 2:
        return None
    if len(args) == 1:
        return []
    return [args[1]] if args[1] in set(names) else None


def routes_to_default(args: Sequence[str], names: Iterable[str]) -> bool:
    """Whether `args` (after the program name) are for `ask` without naming it."""
    if not args:
        return True
    names = list(names)
    if help_request(args, names) is not None:
        return False
    first = args[0]
    if first in names or first in GROUP_OPTIONS:
        return False
    if first.startswith("-"):
        return True  # an ask option (--json, -a) or `-`, the question from stdin
    return not looks_like_typo(first, names)
