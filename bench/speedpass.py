"""20. Large help centres, this tree against the tree before the speed pass (`BEFORE`,
exported with `git archive`, run by the same interpreter with PYTHONPATH pointing at it),
in fresh processes, the two trees taking turns:

- a first index of the large set (PostgreSQL's manual; smoke: a generated set), a cold
  cache each build: wall and CPU time (the target is the tree's own median, <= 1.6 s on
  a quiet 2-CPU machine) and peak RSS (no higher than before);
- refreshing that index with no file changed (`index` again): no slower than before;
- a warm question over half the set, the set, and the set twice over (the pages copied
  under a second folder), and over examples/kb: each tree's ratio of the large set to
  examples/kb (<= 1.2x) and what each doubling adds (<= +5 ms); and the same questions of
  this tree under `articles.refresh: on_index` (a question that trusts the index
  `support-ask index` made, walking nothing), against this tree's default;
- what each doubling adds to this tree's question in one process (bench/doubling_worker.py:
  the help centre opened and the passages selected, under each rule, the calls taking
  turns), where a fresh process's start-up, the same at every size, does not spread the
  few milliseconds the target is about over a run's noise.

The relevance floor is off (as in `bench/run scale`): this measures the answering path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.context import Context
from bench.docsets import KB, PG_DOC, ROOT, copy_pages, size_of, write_html_set
from bench.loopback import ANSWER, Loopback
from bench.procs import Command, Run, RunFailed, interleave
from bench.scale import KB_QUESTION, LARGE_QUESTION, subsets
from bench.stats import Measure, Row, Summary, Target, Unit
from bench.tool import Tool, checkout, today_env

GROUP = "18 speed pass"
# Main before the speed pass; $BENCH_BEFORE names another commit.
BEFORE = os.environ.get("BENCH_BEFORE") or "1c6241e"
BUILD_TARGET = Target.at_most(Measure.MEDIAN, 1.6, "<= 1.6 s")
RSS_TARGET = Target.at_most(Measure.RATIO, 1.0, "no higher than before")
REFRESH_TARGET = Target.at_most(Measure.RATIO, 1.05, "no slower than before (<= 1.05x)")
WARM_TARGET = Target.at_most(Measure.RATIO, 1.2, "<= 1.2x examples/kb question")
DOUBLING_TARGET = Target.at_most(Measure.ADDED_MEDIAN, 0.005, "<= +5 ms per doubling")
TRUSTING = "this tree, on_index"


def _large(ctx: Context) -> Path:
    folder = ctx.folder("speedpass-large")
    if ctx.sizes.real_docs:
        if not PG_DOC.installed:
            raise RunFailed(PG_DOC.missing())
        copy_pages(PG_DOC.folder, folder)
    else:
        write_html_set(folder, ctx.sizes.generated_bytes)
    return folder


def run(ctx: Context) -> list[Row]:
    tree = checkout(BEFORE, ctx.folder("speedpass-before"))
    if tree is None:
        return [Row(GROUP, "this tree vs before", Unit.COUNT,
                    note=f"skipped: commit {BEFORE} not in this clone")]  # fmt: skip
    large = _large(ctx)
    half, double = subsets(large, ctx.folder("speedpass-subsets"))
    kb = ctx.folder("speedpass-kb")
    shutil.copytree(KB.folder, kb, dirs_exist_ok=True)
    with Loopback() as server:
        tools = {
            "this tree": Tool(ctx.support_ask, ctx.folder("speedpass-new"), server,
                              min_relevance=0.0),
            f"before ({BEFORE})": Tool(ctx.support_ask, ctx.folder("speedpass-old"), server,
                                       env=today_env(tree), min_relevance=0.0),
        }  # fmt: skip
        rows = _build(ctx, tools, large)
        tools[TRUSTING] = Tool(ctx.support_ask, ctx.folder("speedpass-trusting"), server,
                               min_relevance=0.0, refresh="on_index")  # fmt: skip
        sets = {"half": half, "whole": large, "double": double}
        rows += _warm(ctx, tools, sets, kb)
    return rows + _in_one_process(ctx, sets)


def _of(runs: Sequence[Run], field: str) -> Summary:
    return Summary.of([getattr(r, field) for r in runs])


def _cold(tool: Tool, tag: str) -> Callable[[int], None]:
    """Before each build: a fresh, empty cache dir (the tool's env names it)."""
    cache = tool.work / f"cache-{tag}"

    def before(_: int) -> None:
        shutil.rmtree(cache, ignore_errors=True)

    tool.env["XDG_CACHE_HOME"] = str(cache)
    return before


def _build(ctx: Context, tools: dict[str, Tool], large: Path) -> list[Row]:
    size = size_of(large)
    builds = []
    for name, tool in tools.items():
        empty = _cold(tool, "cold")  # names the cache dir in the tool's env: first
        builds.append(Command(f"first index, {name}", tool.index_argv(large, "-q"),
                              env=dict(tool.env), before=empty))  # fmt: skip
    runs = interleave(builds, rounds=ctx.sizes.build_rounds + 1, warmup=1, env={}, cwd=ctx.scratch)
    refreshes = []
    for name, tool in tools.items():
        tool.env["XDG_CACHE_HOME"] = str(tool.work / "cache-warm")
        tool.index(large, "-q")
        refreshes.append(Command(f"unchanged refresh, {name}", tool.index_argv(large, "-q"),
                                 env=dict(tool.env)))  # fmt: skip
    again = interleave(refreshes, rounds=ctx.sizes.kb_rounds, warmup=1, env={}, cwd=ctx.scratch)
    new, old = (runs[c.name] for c in builds)
    fresh, stale = (again[c.name] for c in refreshes)
    label = f"first index ({size})"
    base = builds[1].name
    return [
        Row(GROUP, label + ", this tree", Unit.SECONDS, _of(new, "wall"), _of(old, "wall"),
            base, BUILD_TARGET),
        Row(GROUP, label + ", this tree, CPU", Unit.SECONDS, _of(new, "cpu"), _of(old, "cpu"),
            base + " CPU"),
        Row(GROUP, label + ", this tree, peak RSS", Unit.MIB, _of(new, "maxrss"),
            _of(old, "maxrss"), base, RSS_TARGET),
        Row(GROUP, refreshes[0].name, Unit.MILLIS, _of(fresh, "wall"), _of(stale, "wall"),
            refreshes[1].name, REFRESH_TARGET),
    ]  # fmt: skip


def _warm(ctx: Context, tools: dict[str, Tool], sets: dict[str, Path], kb: Path) -> list[Row]:
    commands = []
    for name, tool in tools.items():
        for folder in (*sets.values(), kb):
            tool.index(folder, "-q")
        for label, folder in (*sets.items(), ("examples/kb", kb)):
            argv = tool.ask_argv(LARGE_QUESTION if folder != kb else KB_QUESTION, folder)
            commands.append(Command(f"warm question, {label}, {name}", argv,
                                    (ANSWER + "\n").encode(), dict(tool.env)))  # fmt: skip
    runs = interleave(commands, rounds=ctx.sizes.kb_rounds, warmup=ctx.sizes.proc_warmup,
                      env={}, cwd=ctx.scratch)  # fmt: skip
    wall = {c.name: _of(runs[c.name], "wall") for c in commands}
    rows = []
    for name in tools:
        small = f"warm question, examples/kb, {name}"
        rows.append(Row(GROUP, f"warm question, whole set, {name}", Unit.MILLIS,
                        wall[f"warm question, whole, {name}"], wall[small], small,
                        WARM_TARGET))  # fmt: skip
        for smaller, larger in (("half", "whole"), ("whole", "double")):
            low = f"warm question, {smaller}, {name}"
            rows.append(Row(GROUP, f"warm question, {larger}, {name}", Unit.MILLIS,
                            wall[f"warm question, {larger}, {name}"], wall[low], low,
                            DOUBLING_TARGET))  # fmt: skip
    this, before, trusting = list(tools)
    for label in sets:
        rows.append(Row(GROUP, f"warm question, {label}, {trusting}", Unit.MILLIS,
                        wall[f"warm question, {label}, {trusting}"],
                        wall[f"warm question, {label}, {this}"],
                        f"warm question, {label}, {this}"))  # fmt: skip
    rows.append(Row(GROUP, f"warm question, whole, {this}", Unit.MILLIS,
                    wall[f"warm question, whole, {this}"],
                    wall[f"warm question, whole, {before}"], before))  # fmt: skip
    rows.append(Row(GROUP, f"warm question, examples/kb, {this}", Unit.MILLIS,
                    wall[f"warm question, examples/kb, {this}"],
                    wall[f"warm question, examples/kb, {before}"], before))  # fmt: skip
    return rows


# A call in one process costs a tenth of a fresh process's question: more turns, same time.
IN_PROCESS_ROUNDS = 3


def _in_one_process(ctx: Context, sets: dict[str, Path]) -> list[Row]:
    """Each doubling's added time to this tree's question, in one process, per rule."""
    rounds = ctx.sizes.kb_rounds * IN_PROCESS_ROUNDS
    argv = [sys.executable, str(ROOT / "bench" / "doubling_worker.py"),
            str(ctx.folder("speedpass-inprocess") / "cache"), str(rounds), LARGE_QUESTION,
            *(str(folder) for folder in sets.values())]  # fmt: skip
    # Run as a script, this tree first on its path (as bench/offline.py runs its worker).
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    if done.returncode != 0:
        raise RunFailed(f"the in-process worker failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout)
    if not out["same"]:
        raise RunFailed("the in-process worker chose other passages in some call")
    rows = []
    for rule, by_folder in out["seconds"].items():
        took = {label: Summary.of(by_folder[str(folder)]) for label, folder in sets.items()}
        for smaller, larger in (("half", "whole"), ("whole", "double")):
            low = f"a question's help centre in one process, {smaller}, {rule}"
            rows.append(Row(GROUP, f"a question's help centre in one process, {larger}, {rule}",
                            Unit.MILLIS, took[larger], took[smaller], low,
                            DOUBLING_TARGET))  # fmt: skip
    return rows
