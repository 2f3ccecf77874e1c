"""What every benchmark is given: the mode's sizes, a scratch folder, the commands to run."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sizes:
    """Iteration counts. The smoke sizes only prove each benchmark still runs."""

    proc_rounds: int  # fresh-process runs per candidate
    proc_warmup: int
    inproc_iterations: int  # requests per candidate, in-process
    engine_iterations: int  # engine-alone questions per candidate
    state_procs: int
    state_updates: int  # per process
    state_single: int  # single-process read+update rounds
    article_sizes: tuple[int, ...]  # bytes of generated articles
    article_reps: int
    real_docs: bool  # the Debian manuals (bench/setup), else examples/kb and a generated set
    budgets: tuple[int, ...]  # the quality sweep's --max-article-tokens, beside the default
    kb_rounds: int  # fresh-process rounds for the help-centre speed rows
    build_rounds: int  # cold index builds of the large set
    generated_bytes: int  # the generated HTML set, when not real_docs


FULL = Sizes(
    proc_rounds=25,
    proc_warmup=2,
    inproc_iterations=4000,
    engine_iterations=20000,
    state_procs=16,
    state_updates=200,
    state_single=1000,
    article_sizes=(1_000_000, 10_000_000),
    article_reps=5,
    real_docs=True,
    budgets=(2000, 4000, 8000, 16000),
    kb_rounds=15,
    build_rounds=3,
    generated_bytes=0,
)

SMOKE = Sizes(
    proc_rounds=2,
    proc_warmup=1,
    inproc_iterations=30,
    engine_iterations=100,
    state_procs=4,
    state_updates=10,
    state_single=20,
    article_sizes=(100_000,),
    article_reps=1,
    real_docs=False,
    budgets=(500,),
    kb_rounds=2,
    build_rounds=1,
    generated_bytes=2_000_000,
)


def support_ask_argv() -> list[str]:
    """`python -m cli` with this interpreter: what the console script runs, reached in a
    way every tree a benchmark compares has (the script names the entry point's module,
    which moved to cli.shell.app and then to cli/__main__.py itself; cli/__main__.py has
    always been there)."""
    return [sys.executable, "-m", "cli"]


def filesystem(path: Path) -> str:
    """The type of the filesystem holding `path` ("ext4", "tmpfs"), from /proc/mounts."""
    best, kind = "", "?"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    target = str(path.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


@dataclass(frozen=True)
class Context:
    smoke: bool
    sizes: Sizes
    scratch: Path  # a private temporary folder, removed after the run
    python: str = sys.executable

    @property
    def support_ask(self) -> list[str]:
        return support_ask_argv()

    def folder(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=True)
        return path
