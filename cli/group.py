"""The top-level command group: `ask` is the default command.

`support-ask "How do I ...?"` runs `ask`; `support-ask simulate ...` runs `simulate`.
A first word that looks like a mistyped command name (one bare word close to a command:
`simulat`, `cooldown`) is not asked as a question but rejected with Typer's
"Did you mean ...?" and exit 2, because sending `cooldown` to an LLM is never what was meant.
"""

from __future__ import annotations

import re
from difflib import get_close_matches

from typer import _click
from typer.core import TyperGroup

from cli.plainparams import install

DEFAULT_COMMAND = "ask"
# Options the group itself takes; any other leading option belongs to `ask`.
GROUP_OPTIONS = frozenset(
    {"-h", "--help", "--version", "--install-completion", "--show-completion"}
)
_BARE_WORD = re.compile(r"[a-z][a-z0-9_-]*\Z")
# Stricter than difflib's default 0.6: a one-word question must be really close to a
# command name (`simulat`, `cooldown`, `confg`) before it is treated as a typo.
TYPO_CUTOFF = 0.75


class AskByDefault(TyperGroup):
    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        # Every command is in place by now (however it was registered): give them all
        # plain coercion before any value is parsed (see cli.plainparams).
        install(self, ctx)
        if not ctx.resilient_parsing and self.routes_to_default(args):
            ctx.meta["support_ask.default_command"] = True
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def looks_like_typo(self, word: str) -> bool:
        if not _BARE_WORD.match(word):
            return False
        return bool(get_close_matches(word, list(self.commands), n=1, cutoff=TYPO_CUTOFF))

    def routes_to_default(self, args: list[str]) -> bool:
        if not args:
            return True
        first = args[0]
        if first in self.commands or first in GROUP_OPTIONS:
            return False
        if first.startswith("-"):
            return True  # an ask option (--json, -a) or `-`, the question from stdin
        return not self.looks_like_typo(first)
