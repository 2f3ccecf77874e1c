"""SIGTERM and SIGHUP stop a run the way Ctrl-C does.

A supervisor's `kill`, `timeout`, a CI runner cancelling a job, or a closed terminal
should not leave a half-said run: the handler raises `StopSignal` (a KeyboardInterrupt, so
every path that finishes cleanly after Ctrl-C does so here too: the live table ends, the
state file is either replaced whole or untouched, the question is logged, `--json`
prints its object) and the process exits as a shell reports that signal, 128 + its
number. Installed by `main` only: a test runner or an embedding program keeps its own.
"""

from __future__ import annotations

import signal
from types import FrameType

from cli.runtime.exitcodes import ExitCode

_NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
_CODES = {
    signal.SIGINT: ExitCode.INTERRUPTED,
    signal.SIGTERM: ExitCode.TERMINATED,
    signal.SIGHUP: ExitCode.HANGUP,
}


class StopSignal(KeyboardInterrupt):
    """The run was stopped by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once: a second signal while the run is finishing up (logging, printing the JSON)
    # must not cut that short; the first one already decided how the run ends.
    for each in _NAMES:
        signal.signal(each, signal.SIG_IGN)
    raise StopSignal(signum)


def stop_on_signals() -> None:
    for signum in _NAMES:
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue  # `nohup` asked for SIGHUP to be ignored: keep it so
        signal.signal(signum, _stop)


def exit_code_for_signal(signum: int) -> ExitCode:
    """What a shell reports for a run that `signum` (SIGINT, SIGTERM, SIGHUP) stopped."""
    return _CODES.get(signal.Signals(signum), ExitCode.INTERRUPTED)


def exit_code_for_stop(exc: KeyboardInterrupt) -> ExitCode:
    return exit_code_for_signal(exc.signum if isinstance(exc, StopSignal) else signal.SIGINT)


def stop_message(exc: KeyboardInterrupt) -> str:
    if isinstance(exc, StopSignal):
        name = _NAMES.get(signal.Signals(exc.signum), f"signal {exc.signum}")
        why = "the terminal went away" if exc.signum == signal.SIGHUP else "asked to stop"
        return f"stopped by {name} ({why})"
    return "interrupted (Ctrl-C)"
