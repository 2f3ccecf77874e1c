"""23. Stopping a first index: a terminal's Ctrl-C (SIGINT), `timeout`'s SIGTERM and a closed
terminal's SIGHUP, each sent to the whole process group of `support-ask index` (its own
process, the reading pool's fork server and workers, the resource tracker) at a random
moment of a first index, this tree against the tree before (`BEFORE`, exported with `git
archive`), the two taking turns over the same moments.

A stop is said cleanly when the run exits with the README's code for that signal (130,
143, 129) within `HANG_S`, says on stderr what stopped it, prints no traceback, and leaves
no process of its group `LEFT_S` after it. A stop in the first milliseconds, before Python
has run any of support-ask to install its handlers, ends the process by the signal itself:
a shell reports that as the same 128 + n and nothing was begun, so it counts as clean too,
and is shown apart. A run that finished before its moment is not judged. The moments are
uniform over the time one first index took, measured first. Full runs read PostgreSQL's
manual (bench/setup installs it); smoke runs a generated set, a few runs of each signal.
Each run starts as a terminal's job would, SIGINT and SIGHUP at their defaults: a
benchmark started in the background, or under `nohup`, passes them on ignored.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from bench.context import Context
from bench.docsets import PG_DOC, copy_pages, write_html_set
from bench.procs import RunFailed, child_env
from bench.stats import Measure, Row, Target, Unit
from bench.tool import checkout, today_env
from cli.runtime.signals import StopSignal, stop_message

GROUP = "23 stopping a first index"
# Main before the fork server and workers blocked SIGTERM and SIGHUP too.
BEFORE = os.environ.get("BENCH_STOPS_BEFORE") or "bf04193"
STOPS: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
HANG_S = 30.0  # a stop the run has not ended by then is a hang: the group is killed
LEFT_S = 10.0  # the fork server ends once its run has; a process still there after this is left
CLEAN_TARGET = Target.at_least("100% said cleanly", (Measure.TOTAL, 1.0))


class Outcome(StrEnum):
    CLEAN = "said cleanly"
    BY_SIGNAL = "ended by it before start-up"
    FINISHED = "finished first"
    SILENT = "nothing said"
    TRACEBACK = "traceback"
    WRONG_CODE = "wrong exit code"
    HUNG = "hung"
    LEFT = "process left"


def run(ctx: Context) -> list[Row]:
    tree = checkout(BEFORE, ctx.folder("stops-before"))
    trees = {"this tree": {}} if tree is None else {"this tree": {}, "before": today_env(tree)}
    folder = ctx.folder("stops-set")
    if ctx.sizes.real_docs:
        if not PG_DOC.installed:
            raise RunFailed(PG_DOC.missing())
        copy_pages(PG_DOC.folder, folder)
        runs = 20
    else:
        write_html_set(folder, ctx.sizes.generated_bytes)
        runs = 2
    argv = [*ctx.support_ask, "index", str(folder), "-q"]
    home = ctx.folder("stops-home-timed")
    began = time.monotonic()
    subprocess.run(argv, env=_fresh(home, {}), cwd=home, check=True, capture_output=True,
                   preexec_fn=_as_a_job)  # fmt: skip
    spread = time.monotonic() - began
    moments = random.Random(23).sample(range(1, 1000), runs)  # the same for every tree
    counted: dict[tuple[str, int], Counter[Outcome]] = {}
    for signum in STOPS:
        for moment in moments:
            for name, extra in trees.items():
                home = ctx.folder(f"stops-home-{name.replace(' ', '-')}")
                outcome = _stop_once(
                    argv, _fresh(home, extra), home, signum, moment / 1000 * spread
                )
                counted.setdefault((name, signum), Counter())[outcome] += 1
    rows = []
    for signum in STOPS:
        new = counted[("this tree", signum)]
        old = counted.get(("before", signum))
        rows.append(
            Row(GROUP, f"{signal.Signals(signum).name} to the group within {spread:.1f} s, "
                "this tree", Unit.PERCENT,
                value=_clean(new), base_value=None if old is None else _clean(old),
                base_name=f"before ({BEFORE})" if old is not None else "",
                target=CLEAN_TARGET, note=_said(new) + ("" if old is None else
                f"; before: {_said(old)}"))
        )  # fmt: skip
    return rows


def _fresh(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """A private home and an empty cache dir: each run is a first index."""
    shutil.rmtree(home / "cache", ignore_errors=True)
    return child_env(home, extra)


def _stop_once(argv: Sequence[str], env: dict[str, str], cwd: Path, signum: int,
               after_s: float) -> Outcome:  # fmt: skip
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_a_job)  # fmt: skip
    try:
        proc.communicate(timeout=after_s)
        return Outcome.FINISHED
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signum)
    try:
        _, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome.HUNG
    if b"Traceback" in err:
        _end_group(proc.pid)
        return Outcome.TRACEBACK
    if proc.returncode == -signum and not err:
        return Outcome.BY_SIGNAL if _end_group(proc.pid) else Outcome.LEFT
    if proc.returncode != STOPS[signum]:
        _end_group(proc.pid)
        return Outcome.FINISHED if proc.returncode == 0 else Outcome.WRONG_CODE
    if _said_for(signum) not in err:
        _end_group(proc.pid)
        return Outcome.SILENT
    return Outcome.CLEAN if _end_group(proc.pid) else Outcome.LEFT


def _said_for(signum: int) -> bytes:
    """What the run says on stderr for the stop `signum` (the tree before said the same)."""
    stop = KeyboardInterrupt() if signum == signal.SIGINT else StopSignal(signum)
    return stop_message(stop).encode()


def _as_a_job() -> None:
    """In the child, before it runs: the stop signals at their defaults."""
    for signum in STOPS:
        signal.signal(signum, signal.SIG_DFL)


def _end_group(group: int) -> bool:
    """Whether the group's processes all ended by themselves within `LEFT_S` (those that did
    not are killed, so the next run starts alone)."""
    deadline = time.monotonic() + LEFT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    return False


def _clean(counts: Counter[Outcome]) -> float:
    judged = sum(n for outcome, n in counts.items() if outcome is not Outcome.FINISHED)
    clean = counts[Outcome.CLEAN] + counts[Outcome.BY_SIGNAL]
    return clean / judged if judged else float("nan")


def _said(counts: Counter[Outcome]) -> str:
    return ", ".join(f"{counts[o]} {o}" for o in Outcome if counts[o])
