"""A command that ended on an exception, as the user sees it: one mapping from what was
raised to the exit code, the message and the fix, used both for stderr (the command
guard in cli.runtime.guard) and for the object `ask --json` prints on stdout when the engine never
produced a Result (an empty question, missing articles, a bad config, an interruption).

`KeyboardInterrupt` covers Ctrl-C and, through cli.runtime.signals, SIGTERM and SIGHUP: each
stops the run the same way and exits as a shell reports that signal (130, 143, 129).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from gateway.record import record

if TYPE_CHECKING:
    from gateway.config import ConfigError

# The JSON `error.kind` of each code a failure before (or around) the engine exits with.
# The engine's own failures have FailureKind's values (unavailable, exhausted, ...).
KINDS: dict[ExitCode, str] = {
    ExitCode.INTERNAL: "internal",
    ExitCode.USAGE: "usage",
    ExitCode.NOINPUT: "no_input",
    ExitCode.CONFIG: "config",
    ExitCode.DATAERR: "bad_input",  # a line of `batch`'s input that cannot be asked
    ExitCode.HANGUP: "interrupted",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "interrupted",
}
# Retrying the same command cannot help these: the JSON says "fatal", as for a bad request.
_FATAL = frozenset({ExitCode.USAGE, ExitCode.NOINPUT, ExitCode.CONFIG, ExitCode.DATAERR})


class CliError(Exception):
    """A problem the user can fix: printed as 'error: message' and 'fix: ...', no traceback."""

    def __init__(self, message: str, code: ExitCode, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.fix = fix


@record
class CommandFailure:
    code: ExitCode
    message: str
    fix: str | None = None
    problems: tuple[ConfigError, ...] = ()  # a bad config's every problem


def failure_of(exc: BaseException) -> CommandFailure | None:
    """What `exc` means to the user; None for a gone stdout reader (nothing to say) and for
    what is not ours to handle (SystemExit)."""
    from cli.runtime.signals import exit_code_for_stop, stop_message
    from gateway.config import ConfigError

    if isinstance(exc, CliError):
        return CommandFailure(exc.code, exc.message, exc.fix)
    if isinstance(exc, ConfigError):
        return CommandFailure(ExitCode.CONFIG, str(exc.problems[0]), problems=exc.problems)
    if isinstance(exc, KeyboardInterrupt):
        return CommandFailure(exit_code_for_stop(exc), stop_message(exc))
    if isinstance(exc, BrokenPipeError) or not isinstance(exc, Exception):
        return None
    return CommandFailure(
        ExitCode.INTERNAL,
        f"internal error ({type(exc).__name__}: {exc})",
        "this is a bug in support-ask: run again with --debug for the traceback, and report it",
    )


def failure_json(failure: CommandFailure, *, elapsed_s: float | None = None) -> dict[str, object]:
    """The --json object for a question the engine never answered: the same
    schema_version-1 shape as a Result's, with nothing routed, counted or attempted
    (docs/decisions.md#the-json-contract)."""
    error: dict[str, object] = {
        "kind": KINDS.get(failure.code, "internal"),
        "message": failure.message,
        "fix": failure.fix,
        "deployments": [],
    }
    if failure.problems:
        error["problems"] = [p.as_json() for p in failure.problems]
    return {
        "schema_version": 1,
        "status": "fatal" if failure.code in _FATAL else "failed",
        "answer": None,
        "deployment": None,
        "provider": None,
        "model": None,
        "routed": None,
        "input_tokens": None,
        "input_tokens_exact": None,
        "elapsed_s": None if elapsed_s is None else round(elapsed_s, 3),
        "attempts": [],
        "action": None,
        "handoff": None,
        "citations": [],
        "citations_dropped": 0,
        "grounded": None,
        "error": error,
    }


def write_failure_json(failure: CommandFailure, *, json_lines: bool = False) -> None:
    import json
    import time

    from cli.runtime.started import process_start

    started = process_start()
    obj = failure_json(failure, elapsed_s=None if started is None else time.monotonic() - started)
    if json_lines:
        obj = {"type": "result", **obj}
    try:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # the reader is gone: the exit code still says it
        pass
