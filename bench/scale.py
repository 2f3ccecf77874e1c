"""10. Help-centre speed and memory, end to end, in fresh processes.

The large set is PostgreSQL 15's manual (postgresql-doc-15: 1,169 HTML pages, 16 MB;
bench/setup installs it), copied into the scratch folder; smoke runs generate ~2 MB of
HTML instead. Every support-ask run has a private home, so its own cache dir and index.
What is measured, each interleaved with its baseline in the same run:

- the index build (`support-ask index DIR -q`, a fresh cache each round) against the floor
  of walking the set and reducing every page to text with html.parser in a fresh process;
  pages/s and MB/s from its median;
- a warm question (index built) over the large set against one question over examples/kb
  (its index warm too): the target is <= 1.5x;
- editing one page and asking again against a warm question: <= 1.2x;
- peak RSS of the index build for half the set, the set, and the set twice over: bounded
  by the largest page plus a constant, so doubling the set must not add what it holds;
- the examples/kb question against support-ask as it was before the help-centre work
  (commit bench.tool.TODAY, run from a scratch extraction): no slower than today.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.context import Context
from bench.docsets import KB, PG_DOC, ROOT, Size, copy_pages, pages, size_of, write_html_set
from bench.loopback import ANSWER, Loopback
from bench.procs import Command, Run, RunFailed, interleave, run_once
from bench.stats import Measure, Row, Summary, Target, Unit
from bench.tool import TODAY, Tool, Unsupported, checkout_today, today_env

GROUP = "10 help-centre speed"
RSS_GROUP = "10 help-centre memory"
WARM_TARGET = Target.at_most(Measure.RATIO, 1.5, "<= 1.5x examples/kb question")
TOUCH_TARGET = Target.at_most(Measure.RATIO, 1.2, "<= 1.2x warm question")
BUILD_TARGET = Target.at_most(Measure.MEDIAN, 10.0, "<= 10 s")
TODAY_TARGET = Target.at_most(Measure.RATIO, 1.05, "no slower than today (<= 1.05x)")
# Doubling the set adds 16 MB of pages; an index build that held the set would add more
# than that. Bounded by the largest page plus a constant, it adds next to nothing.
RSS_TARGET = Target.at_most(Measure.ADDED_MEDIAN, 8 * 1024 * 1024, "<= +8 MiB")
KB_QUESTION = "How do I reset my password?"
LARGE_QUESTION = "How do I make a backup of my database and restore it on another server?"
EDITED = "backup-dump.html"  # the page the touch benchmark edits (in the PostgreSQL set)


def _large_set(ctx: Context) -> tuple[Path, Size, str]:
    """The large set in the scratch folder: its folder, size, and which page to edit."""
    folder = ctx.folder("scale-large")
    if ctx.sizes.real_docs:
        if not PG_DOC.installed:
            raise RunFailed(PG_DOC.missing())
        return folder, copy_pages(PG_DOC.folder, folder), EDITED
    size = write_html_set(folder, ctx.sizes.generated_bytes)
    return folder, size, pages(folder)[size.files // 2].as_posix()


def subsets(large: Path, into: Path) -> tuple[Path, Path]:
    """Half the set (every other page) and the set twice over (two copies side by side),
    made in the folder `into`."""
    half, double = into / "half", into / "double"
    for i, rel in enumerate(pages(large)):
        if i % 2 == 0:
            (half / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(large / rel, half / rel)
    for copy in ("a", "b"):
        shutil.copytree(large, double / copy)
    return half, double


def _floor_argv(ctx: Context, folder: Path) -> list[str]:
    code = "import sys; from bench.docsets import read_pages; read_pages(__import__('pathlib').Path(sys.argv[1]), ('.html', '.htm'))"  # noqa: E501
    return [ctx.python, "-c", code, str(folder)]


def run(ctx: Context) -> list[Row]:
    large, size, edited = _large_set(ctx)
    kb = ctx.folder("scale-kb")
    shutil.copytree(KB.folder, kb, dirs_exist_ok=True)
    rows: list[Row] = []
    with Loopback() as server:
        # The generated manual's pages share few words with the question, so the relevance
        # floor would hand it off: off here, this measures the answering path (the handoff's
        # own cost is `bench/run handoff`'s), as the tree before the floor answers it.
        tool = Tool(ctx.support_ask, ctx.folder("scale-tool"), server, min_relevance=0.0)
        rows += _today(ctx, tool, kb, server)
        try:
            tool.index(kb, "-q")
        except Unsupported:
            rows.append(Row(GROUP, "index, warm question, edit, memory", Unit.COUNT,
                            note="skipped: this tree has no index command"))  # fmt: skip
            return rows
        rows += _build(ctx, tool, large, size)
        rows += _warm(ctx, tool, large, kb, edited)
        rows += _memory(ctx, tool, large, size)
    return rows


def _rounds(ctx: Context) -> dict[str, int]:
    return {"rounds": ctx.sizes.kb_rounds, "warmup": ctx.sizes.proc_warmup}


def _ask(
    tool: Tool,
    name: str,
    question: str,
    articles: Path,
    before: Callable[[int], None] | None = None,
) -> Command:
    argv = tool.ask_argv(question, articles)
    return Command(name, argv, (ANSWER + "\n").encode(), tool.env, before)


def _of(runs: Sequence[Run], field: str) -> Summary:
    return Summary.of([getattr(r, field) for r in runs])


def _today(ctx: Context, tool: Tool, kb: Path, server: Loopback) -> list[Row]:
    """The examples/kb question, this tree against the tree at TODAY."""
    tree = checkout_today(ctx.scratch / "today")
    name = "examples/kb question, this tree"
    if tree is None:
        return [Row(GROUP, name, Unit.COUNT, note=f"skipped: commit {TODAY} not in this clone")]
    old = Tool(ctx.support_ask, ctx.folder("scale-today"), server, env=today_env(tree))
    new_cmd = _ask(tool, name, KB_QUESTION, kb)
    old_cmd = _ask(old, f"examples/kb question, today ({TODAY})", KB_QUESTION, kb)
    runs = interleave([new_cmd, old_cmd], env=tool.env, cwd=tool.home, **_rounds(ctx))
    new, old_runs = runs[new_cmd.name], runs[old_cmd.name]
    return [
        Row(GROUP, name, Unit.MILLIS, _of(new, "wall"), _of(old_runs, "wall"), old_cmd.name,
            TODAY_TARGET),
        Row(GROUP, name + " CPU", Unit.MILLIS, _of(new, "cpu"), _of(old_runs, "cpu"),
            old_cmd.name + " CPU"),
        Row(RSS_GROUP, name, Unit.MIB, _of(new, "maxrss"), _of(old_runs, "maxrss"),
            old_cmd.name),
    ]  # fmt: skip


def _cold_env(tool: Tool, tag: str) -> Callable[[int], dict[str, str]]:
    """A fresh, empty cache dir per call, so every index build starts cold."""

    def env(i: int) -> dict[str, str]:
        cache = tool.work / f"cache-{tag}-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        return {**tool.env, "XDG_CACHE_HOME": str(cache)}

    return env


def _build(ctx: Context, tool: Tool, large: Path, size: Size) -> list[Row]:
    """Cold index builds, interleaved with the read-and-parse floor."""
    builds: list[Run] = []
    floors: list[Run] = []
    cold = _cold_env(tool, "build")
    for i in range(ctx.sizes.build_rounds + 1):  # the first of each warms the page cache
        order = [("build", i), ("floor", i)] if i % 2 == 0 else [("floor", i), ("build", i)]
        for what, n in order:
            if what == "build":
                run = run_once(tool.index_argv(large, "-q"), env=cold(n), cwd=tool.home)
                out = builds
            else:
                run = run_once(_floor_argv(ctx, large), env=tool.env, cwd=ROOT)
                out = floors
            if run.code != 0:
                raise RunFailed(f"{what}: exited {run.code}: {run.stderr[-1500:]!r}")
            if i:
                out.append(run)
    wall = _of(builds, "wall")
    label = f"index build, {size}"
    return [
        Row(GROUP, label, Unit.SECONDS, wall, _of(floors, "wall"),
            "walk + read + html.parser to text", BUILD_TARGET),
        Row(GROUP, label + " CPU", Unit.SECONDS, _of(builds, "cpu"), _of(floors, "cpu"),
            "walk + read + html.parser CPU"),
        Row(GROUP, "index build: pages per second", Unit.PER_S, value=size.files / wall.median),
        Row(GROUP, "index build: MB per second", Unit.MB_PER_S, value=size.bytes / wall.median),
    ]  # fmt: skip


def _warm(ctx: Context, tool: Tool, large: Path, kb: Path, edited: str) -> list[Row]:
    """Warm question over the large set vs the examples/kb question; then an edited page."""
    tool.index(large, "-q")
    warm = _ask(tool, "warm question, large set", LARGE_QUESTION, large)
    small = _ask(tool, "question, examples/kb", KB_QUESTION, kb)
    page = large / edited
    original = page.read_bytes()

    def edit(i: int) -> None:
        page.write_bytes(original + f"\n<!-- edited {i} -->\n".encode())

    touched = _ask(tool, f"edit one page ({edited}), then ask", LARGE_QUESTION, large,
                   before=edit)  # fmt: skip
    runs = interleave([warm, small, touched], env=tool.env, cwd=tool.home, **_rounds(ctx))
    page.write_bytes(original)
    w, s, t = runs[warm.name], runs[small.name], runs[touched.name]
    return [
        Row(GROUP, warm.name, Unit.MILLIS, _of(w, "wall"), _of(s, "wall"), small.name,
            WARM_TARGET),
        Row(GROUP, warm.name + " CPU", Unit.MILLIS, _of(w, "cpu"), _of(s, "cpu"),
            small.name + " CPU"),
        Row(GROUP, touched.name, Unit.MILLIS, _of(t, "wall"), _of(w, "wall"), warm.name,
            TOUCH_TARGET),
        Row(RSS_GROUP, warm.name, Unit.MIB, _of(w, "maxrss"), _of(s, "maxrss"), small.name),
    ]  # fmt: skip


def _memory(ctx: Context, tool: Tool, large: Path, size: Size) -> list[Row]:
    """Peak RSS of a cold index build: half the set, the set, the set twice over."""
    half, double = subsets(large, ctx.folder("scale-subsets"))
    sets = {"half": half, "whole": large, "double": double}
    sizes = {k: size_of(v) for k, v in sets.items()}
    largest = max((p.stat().st_size for p in large.rglob("*.htm*")), default=0)
    cold = _cold_env(tool, "rss")
    runs: dict[str, list[Run]] = {k: [] for k in sets}
    version: list[Run] = []
    for i in range(ctx.sizes.build_rounds):
        for name, folder in sets.items():
            run = run_once(tool.index_argv(folder, "-q"), env=cold(i), cwd=tool.home)
            if run.code != 0:
                raise RunFailed(f"index {name}: exited {run.code}: {run.stderr[-1500:]!r}")
            runs[name].append(run)
        version.append(run_once([*tool.argv, "--version"], env=tool.env, cwd=tool.home))
    rss = {k: _of(v, "maxrss") for k, v in runs.items()}
    floor = _of(version, "maxrss")
    note = f"largest page {largest / 1e6:.2f} MB"
    return [
        Row(RSS_GROUP, f"index build, half ({sizes['half']})", Unit.MIB, rss["half"], floor,
            "support-ask --version"),
        Row(RSS_GROUP, f"index build, whole ({sizes['whole']})", Unit.MIB, rss["whole"],
            rss["half"], "index build, half", note=note),
        Row(RSS_GROUP, f"index build, double ({sizes['double']})", Unit.MIB, rss["double"],
            rss["whole"], "index build, whole", RSS_TARGET, note=note),
        # The same builds' times: how the build scales with the set (time per MB flat).
        Row(GROUP, f"index build, double the set ({sizes['double']})", Unit.SECONDS,
            _of(runs["double"], "wall"), _of(runs["whole"], "wall"), "index build, the set"),
    ]  # fmt: skip


if __name__ == "__main__":
    write_html_set(Path(sys.argv[1]), int(sys.argv[2]))
