"""The exit codes (the README's table; why they are these: docs/decisions.md#exit-codes),
and the one mapping from a Result to its code.

Importing `ExitCode` costs nothing beyond the `enum` every start-up has loaded already
(the Result's vocabulary is read on the first `exit_code_for`), so `--version` and the
entry point name their codes too."""

from __future__ import annotations

from enum import IntEnum
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.model import FailureKind, Result, Status


class ExitCode(IntEnum):
    ANSWERED = 0
    OK = 0  # the same code, for a command that asks no question (index, cooldowns)
    INTERNAL = 1  # a bug: the traceback only with --debug
    USAGE = 2  # unknown flag, missing argument, mistyped command, no question
    REFUSED = 3  # the refusal itself is on stdout, as is
    CHECK_FAILED = 4  # stats/eval: the check ran and found a problem
    HANDOFF = 5  # handed to a person: stdout holds the handoff message, the JSON the reason
    DATAERR = 65  # fatal request: malformed, or too large for every deployment
    NOINPUT = 66  # empty question; no readable article
    UNAVAILABLE = 69  # no deployment could answer
    CANT_CREATE = 73  # config init: the file exists (and no --force), or cannot be created
    IO_ERROR = 74  # a file that had to be written was not: cooldowns reset's, index's
    TEMPFAIL = 75  # everything cooling down or rate-limited past the budget: retry later
    CONFIG = 78  # configuration error, named by file:line:key
    HANGUP = 129  # SIGHUP (the terminal went away): what a shell reports for it
    INTERRUPTED = 130  # Ctrl-C: what a shell reports for a tool ended by SIGINT
    BROKEN_PIPE = 141  # stdout's reader went away (`| head`): as a shell reports SIGPIPE
    TERMINATED = 143  # SIGTERM (`kill`, `timeout`, a supervisor): as a shell reports it


@cache
def _tables() -> tuple[dict[FailureKind, ExitCode], dict[Status, ExitCode]]:
    from gateway.model import FailureKind, Status

    # A failed question's kind says whether waiting would help (75) or the request is at
    # fault (65); anything else means every deployment was tried or skipped (69).
    failure_exit = {
        FailureKind.UNAVAILABLE: ExitCode.TEMPFAIL,
        FailureKind.EXHAUSTED: ExitCode.UNAVAILABLE,
        FailureKind.INCOMPLETE: ExitCode.UNAVAILABLE,
        # Which signal it was is the exception's to say (cli.runtime.signals); a Result
        # alone says Ctrl-C.
        FailureKind.INTERRUPTED: ExitCode.INTERRUPTED,
        FailureKind.TOO_LARGE: ExitCode.DATAERR,
        FailureKind.BAD_REQUEST: ExitCode.DATAERR,
    }
    status_exit = {
        Status.ANSWERED: ExitCode.ANSWERED,
        Status.REFUSED: ExitCode.REFUSED,
        Status.FATAL: ExitCode.DATAERR,
    }
    return failure_exit, status_exit


def exit_code_for(result: Result) -> ExitCode:
    from gateway.model import Action

    failure_exit, status_exit = _tables()
    if result.action is Action.HANDOFF:
        return ExitCode.HANDOFF
    if result.status in status_exit:
        return status_exit[result.status]
    if result.error is None:
        return ExitCode.UNAVAILABLE
    return failure_exit.get(result.error.kind, ExitCode.UNAVAILABLE)
