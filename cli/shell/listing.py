"""The root help's list of commands, without building them.

Building a command's Typer parameters is most of what `support-ask --help` would cost (the
seven lazy commands: about 51 M instructions to import their modules and 112 M to build
them, bench/RESULTS.md), and the list shows only each one's summary: the first paragraph of
its help. So while the root group formats its help, a command not built yet is stood in for
by a bare Typer command holding that summary, which click and Typer's rich panels write
exactly as they write the real one (its name, its help's first paragraph, not hidden, not
deprecated, the default panel).

The summaries are the commands' own first paragraphs, repeated here; tests/cli/
test_listing.py fails when one drifts from its command's help (the root help built
both ways differs).
"""

from __future__ import annotations

from typer.core import TyperCommand

from cli.shell.typer_internals import click

# Command name -> the first paragraph of its help (its docstring's, or its group's help=).
SUMMARIES = {
    "simulate": "Run the real engine against simulated providers that fail as you say.",
    "cooldowns": "List the deployments cooling down (shared by every invocation); reset them.",
    "config": "Write or check the configuration.",
    "stats": "Show who served and how often a fallback did.",
    "eval": "Check every deployment against the prompt's rules.",
    "batch": "Answer a file of questions concurrently, one JSON line per question.",
    "index": "Build or refresh the index of a help centre (DIR), ahead of the first question.",
}


def stand_in(name: str) -> click.Command | None:
    """A bare command that lists as `name` does, or None for one without a summary here
    (which is then built to be listed)."""
    summary = SUMMARIES.get(name)
    return None if summary is None else TyperCommand(name, help=summary)
