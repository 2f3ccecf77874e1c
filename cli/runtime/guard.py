"""How every command ends: its body run under one guard that turns a user's or a provider's
fault into a message and an exit code (a bug into exit 1), and whether help and usage errors
are rich (the Typer app and the `ask --json` usage path both ask).

It lives below the shell so that the commands, the Typer app and the entry point can all
use it without importing one another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from cli.runtime.failure import CommandFailure
    from cli.terminal.diag import Diag


def markup_mode() -> str | None:
    """Rich help and error panels on a colour terminal; plain click text everywhere else,
    so a usage error in a script's log reads as one plain line."""
    from cli.terminal.diag import Diag

    return "rich" if Diag().color and Diag(stream=sys.stdout).color else None


def guarded(diag: Diag, debug: bool, action: Callable[[], int]) -> NoReturn:
    """A Typer command's body, run through `run_guarded`; exits with its code."""
    import typer

    raise typer.Exit(run_guarded(diag, debug, action))


def run_guarded(diag: Diag, debug: bool, action: Callable[[], int]) -> int:
    """Run a command body; a user's or provider's fault becomes a message and its exit code,
    a bug becomes exit 1 (the traceback only with --debug). Never prints a key."""
    from cli.runtime.exitcodes import ExitCode

    try:
        code = int(action())
        # Inside the guard: a reader gone before the last line left is exit 141 here, not
        # "Exception ignored" and 120 when the interpreter flushes on its way out.
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more can be said on stdout, and it is not
        # a bug. Exit as a shell reports a tool that SIGPIPE ended, so `set -o pipefail`
        # scripts see the same status they see for `yes | head`.
        silence_stdout()
        code = ExitCode.BROKEN_PIPE
    except (Exception, KeyboardInterrupt) as exc:
        from cli.runtime.failure import failure_of

        failure = failure_of(exc)
        if failure is None:
            raise
        if failure.code is ExitCode.INTERNAL and debug:
            import traceback

            traceback.print_exc(file=diag.stream)
        tell(diag, failure)
        code = failure.code
    return int(code)


def tell(diag: Diag, failure: CommandFailure) -> None:
    """Say on stderr how a command failed: its message and fix, or a bad config's every
    problem, each with its file:line: key."""
    try:
        if failure.problems:
            for problem in failure.problems:
                diag.error(str(problem))
        else:
            diag.error(failure.message, fix=failure.fix)
    except OSError:  # SIGHUP: the terminal may be gone; the exit code still says it
        pass


def silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
