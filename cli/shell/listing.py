"""The root help's list of commands, without building them.

Building a command's Typer parameters is most of what `support-ask --help` would cost (the
seven lazy commands: about 51 M instructions to import their modules and 112 M to build
them, bench/RESULTS.md), and the list shows only each one's summary: the first paragraph of
its help. So while the root group formats its help, a command not built yet is stood in for
by a bare Typer command holding that summary, which click and Typer's rich panels write
exactly as they write the real one (its name, its help's first paragraph, not hidden, not
deprecated, the default panel).

The summaries are written once, in cli.runtime.common (which the root help loads anyway),
and each command's help starts with its own (`help_of`). tests/cli/test_listing.py still
builds the root help both ways, for a Typer that lists a command by more than its name
and summary.
"""

from __future__ import annotations

from typer.core import TyperCommand

from cli.runtime.common import SUMMARIES
from cli.shell.typer_internals import click


def stand_in(name: str) -> click.Command | None:
    """A bare command that lists as `name` does, or None for one without a summary here
    (which is then built to be listed)."""
    summary = SUMMARIES.get(name)
    return None if summary is None else TyperCommand(name, help=summary)
