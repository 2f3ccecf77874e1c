"""The exit codes (the README's table; why they are these: docs/decisions.md#exit-codes),
and the one mapping from a Result to its code."""

from __future__ import annotations

from enum import IntEnum

from gateway.model import Action, FailureKind, Result, Status


class ExitCode(IntEnum):
    ANSWERED = 0
    INTERNAL = 1  # a bug: the traceback only with --debug
    USAGE = 2  # unknown flag, missing argument, mistyped command, no question
    REFUSED = 3  # the refusal itself is on stdout, as is
    CHECK_FAILED = 4  # stats/eval: the check ran and found a problem
    HANDOFF = 5  # handed to a person: stdout holds the handoff message, the JSON the reason
    DATAERR = 65  # fatal request: malformed, or too large for every deployment
    NOINPUT = 66  # empty question; no readable article
    UNAVAILABLE = 69  # no deployment could answer
    CANT_CREATE = 73  # config init: the file exists (and no --force), or cannot be created
    IO_ERROR = 74  # a file that had to be written was not: cooldowns reset's state file
    TEMPFAIL = 75  # everything cooling down or rate-limited past the budget: retry later
    CONFIG = 78  # configuration error, named by file:line:key
    HANGUP = 129  # SIGHUP (the terminal went away): what a shell reports for it
    INTERRUPTED = 130  # Ctrl-C: what a shell reports for a tool ended by SIGINT
    BROKEN_PIPE = 141  # stdout's reader went away (`| head`): as a shell reports SIGPIPE
    TERMINATED = 143  # SIGTERM (`kill`, `timeout`, a supervisor): as a shell reports it


# A failed question's kind says whether waiting would help (75) or the request is at
# fault (65); anything else means every deployment was tried or skipped (69).
_FAILURE_EXIT: dict[FailureKind, ExitCode] = {
    FailureKind.UNAVAILABLE: ExitCode.TEMPFAIL,
    FailureKind.EXHAUSTED: ExitCode.UNAVAILABLE,
    FailureKind.INCOMPLETE: ExitCode.UNAVAILABLE,
    # Which signal it was is the exception's to say (cli.runtime.signals); a Result alone
    # says Ctrl-C.
    FailureKind.INTERRUPTED: ExitCode.INTERRUPTED,
    FailureKind.TOO_LARGE: ExitCode.DATAERR,
    FailureKind.BAD_REQUEST: ExitCode.DATAERR,
}

_STATUS_EXIT: dict[Status, ExitCode] = {
    Status.ANSWERED: ExitCode.ANSWERED,
    Status.REFUSED: ExitCode.REFUSED,
    Status.FATAL: ExitCode.DATAERR,
}


def exit_code_for(result: Result) -> ExitCode:
    if result.action is Action.HANDOFF:
        return ExitCode.HANDOFF
    if result.status in _STATUS_EXIT:
        return _STATUS_EXIT[result.status]
    if result.error is None:
        return ExitCode.UNAVAILABLE
    return _FAILURE_EXIT.get(result.error.kind, ExitCode.UNAVAILABLE)
