"""1. Start-up: `support-ask --version` and `--help` against bare Python and against
Python that imports httpx, each a fresh process, interleaved."""

from __future__ import annotations

from bench.context import Context
from bench.procs import Command, child_env, interleave
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "1 start-up"
TARGET = Target.at_most(Measure.RATIO, 1.3, "<= 1.30x import httpx")


def run(ctx: Context) -> list[Row]:
    home = ctx.folder("startup-home")
    py = ctx.python
    version = Command("support-ask --version", [*ctx.support_ask, "--version"])
    help_ = Command("support-ask --help", [*ctx.support_ask, "--help"])
    bare = Command("python -c pass", [py, "-c", "pass"])
    httpx = Command("python -c 'import httpx'", [py, "-c", "import httpx"])
    runs = interleave(
        [version, help_, bare, httpx],
        rounds=ctx.sizes.proc_rounds,
        warmup=ctx.sizes.proc_warmup,
        env=child_env(home),
        cwd=home,
    )
    wall = {name: Summary.of([r.wall for r in rs]) for name, rs in runs.items()}
    rows = []
    for cand in (version, help_):
        rows.append(
            Row(
                GROUP, cand.name, Unit.MILLIS, wall[cand.name], wall[httpx.name], httpx.name, TARGET
            )
        )
        rows.append(Row(GROUP, cand.name, Unit.MILLIS, wall[cand.name], wall[bare.name], bare.name))
    rows.append(Row(GROUP, httpx.name, Unit.MILLIS, wall[httpx.name], wall[bare.name], bare.name))
    return rows
