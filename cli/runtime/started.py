"""When this process started, on the monotonic clock: a question's time budget is
measured from it, because that is what a caller's own timeout sees (`timeout 10
support-ask …`, a supervisor's deadline). Everything before the first call, from loading
Python to reading the articles, is spent from the same budget.

Linux says when the process began (/proc/self/stat, in clock ticks since boot); elsewhere,
or if that reading is implausible, the instant `main` started is used, which misses only
the interpreter's own start-up (tens of milliseconds).
"""

from __future__ import annotations

import time

_MARKED: float | None = None
# A process older than this at `main` is not believable (a kernel counting start times on
# another clock, off by the hours a machine slept): use main's own instant instead. Not a
# second or two: a start-up starved on a loaded machine, or stopped (Ctrl-Z, SIGSTOP) and
# continued before `main`, is that old for real, and its caller's timeout counted the wait.
_PLAUSIBLE_AGE_S = 60.0


def _age_from_proc() -> float | None:
    """Seconds since this process started, from the kernel; None when it cannot say."""
    import os

    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        # Field 22; the command name (field 2) is in parentheses and may hold spaces.
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        return boot - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def mark() -> None:
    """Called first thing by `main`: the real command line's process start."""
    global _MARKED
    now = time.monotonic()
    age = _age_from_proc()
    _MARKED = now - age if age is not None and 0 <= age <= _PLAUSIBLE_AGE_S else now


def process_start() -> float | None:
    """The marked start, or None when not run through `main` (a test runner, an embedding
    program): the question's budget then starts when the engine is asked."""
    return _MARKED
