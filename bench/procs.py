"""Fresh processes, timed: wall time, CPU time and peak RSS of each child on its own.

`os.wait4` gives one child's own resource usage (getrusage(RUSAGE_CHILDREN) would give
the largest of all children waited for so far), so every run carries its own peak RSS.
But a child's peak RSS starts from the RSS of the process it was forked from (Linux keeps
the high-water mark of the address space that exec replaced), so a child of this process,
which holds a parsed manual and a BM25 index, would report this process's size. Each
measured command is therefore started by a small launcher (`_LAUNCHER`: a bare
interpreter) that spawns it, times it, waits for it and reports its usage: the command's
peak RSS starts from the launcher's few MiB, not from ours.
Candidates run interleaved, round by round, in an order that rotates each round, so drift
in the machine's load falls on all of them alike.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
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
    code: int = 0  # the exit code it must end with (5: a handoff)


class RunFailed(Exception):
    """A candidate did not do what it is measured doing: the benchmark is broken, not slow."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message.splitlines()[0][:200]  # a short why, for a table


# argv: report-fd, command... The command inherits stdin/stdout/stderr, the environment and
# the working directory; the launcher writes "wall cpu maxrss-KiB exit-code" to report-fd.
_LAUNCHER = """\
import os, sys, time
fd = int(sys.argv[1]); os.set_inheritable(fd, False)
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
report = (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
os.write(fd, " ".join(map(str, report)).encode())
"""


def run_once(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> Run:
    read_end, write_end = os.pipe()
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end)]
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                [*launcher, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=dict(env),
                cwd=cwd,
                pass_fds=(write_end,),
            )
            os.close(write_end)
            write_end = -1
            with os.fdopen(read_end, "rb") as report:
                read_end = -1
                fields = report.read().split()
            if proc.wait() != 0 or len(fields) != 4:
                err.seek(0)
                raise RunFailed(f"could not start {argv[0]}: {err.read()[-1000:]!r}")
            out.seek(0)
            err.seek(0)
            return Run(
                wall=float(fields[0]),
                cpu=float(fields[1]),
                maxrss=int(fields[2]) * 1024,  # Linux reports KiB
                code=int(fields[3]),
                stdout=out.read(),
                stderr=err.read(),
            )
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)


def _check(command: Command, run: Run) -> None:
    wrong_output = command.expect_stdout is not None and run.stdout != command.expect_stdout
    if run.code != command.code or wrong_output:
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


def together(argvs: Sequence[Sequence[str]], *, cwd: Path, what: str) -> tuple[float, list[str]]:
    """Start every command, wait until each has printed "ready" (imports done), release
    them all at once with a line on stdin, and return the wall time from the release to
    the last one's exit, with each one's last line of output (its report)."""
    workers = [
        subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, text=True
        )
        for argv in argvs
    ]
    try:
        for w in workers:
            assert w.stdout is not None
            if w.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {what} worker did not start")
        import time

        start = time.perf_counter()
        for w in workers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        reports = []
        for w in workers:
            assert w.stdout is not None
            line = w.stdout.readline()
            if w.wait() != 0 or not line:
                raise RuntimeError(f"a {what} worker failed (exit {w.returncode})")
            reports.append(line)
        return time.perf_counter() - start, reports
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
