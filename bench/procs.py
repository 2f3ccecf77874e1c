"""Fresh processes, timed: wall time, CPU time and peak RSS of each child on its own.

`os.wait4` gives one child's own resource usage (getrusage(RUSAGE_CHILDREN) would give
the largest of all children waited for so far), so every run carries its own peak RSS.
Candidates run interleaved, round by round, in an order that rotates each round, so drift
in the machine's load falls on all of them alike.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    wall: float  # seconds, spawn to reaped
    cpu: float  # user + system seconds of the child
    maxrss: int  # bytes
    code: int
    stdout: bytes
    stderr: bytes


@dataclass(frozen=True)
class Command:
    name: str
    argv: Sequence[str]
    expect_stdout: bytes | None = None  # when set, a run that prints anything else is an error
    env: Mapping[str, str] | None = None  # instead of the environment `interleave` is given
    before: Callable[[int], None] | None = None  # untimed, before each run (the round number)


class RunFailed(Exception):
    """A candidate did not do what it is measured doing: the benchmark is broken, not slow."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message.splitlines()[0][:200]  # a short why, for a table


def run_once(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> Run:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=dict(env), cwd=cwd
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
        out.seek(0)
        err.seek(0)
        return Run(
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            maxrss=usage.ru_maxrss * 1024,  # Linux reports KiB
            code=proc.returncode,
            stdout=out.read(),
            stderr=err.read(),
        )


def _check(command: Command, run: Run) -> None:
    wrong_output = command.expect_stdout is not None and run.stdout != command.expect_stdout
    if run.code != 0 or wrong_output:
        raise RunFailed(
            f"{command.name}: {' '.join(command.argv)} exited {run.code}\n"
            f"stdout: {run.stdout[:500]!r}\nstderr: {run.stderr[-2000:].decode(errors='replace')}"
        )


def interleave(
    commands: Sequence[Command],
    *,
    rounds: int,
    warmup: int,
    env: Mapping[str, str],
    cwd: Path,
) -> dict[str, list[Run]]:
    """Each command `rounds` times, interleaved; `warmup` untimed rounds first (byte-code
    caches, page cache). Every run is checked: a failing command raises RunFailed."""
    runs: dict[str, list[Run]] = {c.name: [] for c in commands}
    for i in range(warmup + rounds):
        shift = i % len(commands)
        for command in [*commands[shift:], *commands[:shift]]:
            if command.before is not None:
                command.before(i)
            run = run_once(command.argv, env=command.env or env, cwd=cwd)
            _check(command, run)
            if i >= warmup:
                runs[command.name].append(run)
    return runs


def child_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a measured child: this one's, with a private home (so nothing
    reads or writes the user's config, state or logs), no colour, and no support-ask
    variables that would change which config or state it uses."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORT_ASK_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        NO_COLOR="1",
        TERM="dumb",
    )
    for key in ("PYTHONPROFILEIMPORTTIME", "PYTHONDONTWRITEBYTECODE", "PYTHONSTARTUP"):
        env.pop(key, None)
    env.update(extra or {})
    return env
