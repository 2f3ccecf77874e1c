"""0. The regression gate (`bench/run --smoke` runs it first; `bench/run gate` alone): this
tree against a baseline tree measured in the same run, on what every question pays: the
start-up of `--version`, an offline answer over examples/kb (no config), and the engine
alone per question (an in-memory provider). A figure more than 20 % worse than the
baseline's is a MISS, and `bench/run` then exits 3.

The baseline is `$BENCH_BASELINE` (any git ref), else the merge-base with `main`, else (on
main's tip itself) the parent commit, exported with `git archive`; this checkout's files
are copied beside it the same way, and both run with this interpreter and its packages.
Without git or that commit the gate says so and passes.

Noise is kept out rather than averaged out: with valgrind on the PATH each figure is the
instructions executed (callgrind, user space; bytecode caches warm, `PYTHONHASHSEED=0`),
which a loaded machine does not change. Without it, each figure is the median CPU time of
interleaved rounds (the order alternating each round), and a figure over the limit is
measured once more and fails only if it is over it again.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.context import Context
from bench.procs import child_env
from bench.stats import Measure, Row, Target, Unit
from bench.trees import ROOT, exported, resolved, working_copy

GROUP = "0 regression gate"
LIMIT = 1.20
TARGET = Target.at_most(Measure.RATIO, LIMIT, "<= 1.20x the baseline tree")
ENGINE_QUESTIONS = 200
QUESTION = "How do I reset my password?"

Measured = Callable[[Path], float]


def baseline_commit() -> str | None:
    ref = os.environ.get("BENCH_BASELINE")
    if ref:
        return resolved(ref)
    head = resolved("HEAD")
    base = None
    if head is not None and resolved("main") is not None:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True
        )
        base = done.stdout.strip() or None
    return resolved("HEAD^") if base is None or base == head else base


def _env(ctx: Context, tree: Path) -> dict[str, str]:
    home = ctx.folder(f"gate-home-{tree.name}")
    env = child_env(home, {"PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"})
    env.pop("VIRTUAL_ENV", None)
    return env


def _instructions(argv: list[str], env: dict[str, str], cwd: Path, out: Path) -> float:
    for _ in range(2):  # warm: bytecode and the config cache written
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        check=True,
    )
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            out.unlink()
            return float(line.split()[1])
    raise RuntimeError(f"callgrind wrote no totals for {argv}")


def _cpu(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    before = os.times()
    subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def _figures(ctx: Context, counting: bool) -> dict[str, Measured]:
    """Each gated figure, as a measurement of one tree."""
    py = ctx.python
    cwd = ctx.folder("gate-work")
    kb = str(ROOT / "examples" / "kb")
    commands = {
        "--version": [py, "-m", "cli", "--version"],
        "offline answer over examples/kb": [py, "-m", "cli", QUESTION, "-a", kb],
    }
    worker = str(ROOT / "bench" / "engine_worker.py")
    out = ctx.scratch / "gate.callgrind"

    def command(argv: list[str]) -> Measured:
        def measure(tree: Path) -> float:
            env = _env(ctx, tree)
            return _instructions(argv, env, cwd, out) if counting else _cpu(argv, env, cwd)

        return measure

    def engine(tree: Path) -> float:
        env = _env(ctx, tree)
        if counting:
            many = _instructions([py, worker, str(ENGINE_QUESTIONS)], env, tree, out)
            none = _instructions([py, worker, "0"], env, tree, out)
            return (many - none) / ENGINE_QUESTIONS
        done = subprocess.run(
            [py, worker, str(ENGINE_QUESTIONS)], env=env, cwd=tree, capture_output=True, text=True
        )
        return float(done.stdout.split()[-1])

    figures = {name: command(argv) for name, argv in commands.items()}
    figures["engine alone, per question"] = engine
    return figures


def _compare(measure: Measured, cand: Path, base: Path, rounds: int) -> tuple[float, float]:
    """Medians of `rounds` interleaved measurements of each tree (who goes first flips)."""
    c: list[float] = []
    b: list[float] = []
    for i in range(rounds):
        order = ((cand, c), (base, b)) if i % 2 == 0 else ((base, b), (cand, c))
        for tree, out in order:
            out.append(measure(tree))
    return statistics.median(c), statistics.median(b)


def run(ctx: Context) -> list[Row]:
    commit = baseline_commit()
    if commit is None:
        note = "no baseline commit (no git, or BENCH_BASELINE names none): not gated"
        return [Row(GROUP, "regression gate", Unit.COUNT, note=note)]
    base = exported(ctx, commit, "gate")
    cand = working_copy(ctx, "gate")
    counting = shutil.which("valgrind") is not None
    unit = Unit.COUNT if counting else Unit.SECONDS
    how = "instructions" if counting else "CPU time"
    rounds = 1 if counting else 7
    rows = []
    for name, measure in _figures(ctx, counting).items():
        now, was = _compare(measure, cand, base, rounds)
        if not counting and now > was * LIMIT:  # noise gets one more chance, a change none
            now, was = _compare(measure, cand, base, rounds)
        rows.append(
            Row(
                GROUP,
                f"{name} ({how})",
                unit,
                value=now,
                base_value=was,
                base_name=f"the same at {commit[:10]}",
                target=TARGET,
            )
        )
    print(f"#   gate: against {commit[:10]}, by {how}", file=sys.stderr, flush=True)
    return rows
