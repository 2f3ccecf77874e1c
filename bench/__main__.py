"""`bench/run [--smoke] [--markdown] [NAME ...]`: run the benchmarks, print the table.

Exit status: 0 when every benchmark ran (a missed target is a finding, not a failure:
benchmarks are not tests), 1 when a benchmark itself crashed, 2 for a usage error, 3 when
the regression gate (`bench.gate`, first in every run) found a figure more than 20 % worse
than the baseline tree's measured in the same run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from bench.context import FULL, SMOKE, Context
from bench.gate import GROUP as GATE
from bench.stats import Row, Verdict
from bench.table import render

# name -> (module, what it measures). Each module has `run(ctx) -> list[Row]`.
BENCHMARKS = {
    "gate": ("bench.gate", "0 regression gate: this tree vs the baseline tree, same run"),
    "startup": ("bench.startup", "1 start-up: --version, --help vs python / import httpx"),
    "question": ("bench.question", "2+6 one answered question, fresh process: time and peak RSS"),
    "inproc": ("bench.inproc", "3 in-process: engine + adapter vs raw kept-alive httpx"),
    "state": ("bench.state", "4 state file: 16 processes contending, single-process cost"),
    "content": ("bench.content", "5 token counting and article loading, 1 MB and 10 MB"),
    "redaction": ("bench.redaction", "7 redacting keys: streamed first token, the scrubber"),
    "sse": ("bench.sse", "8 SSE decoder: a 2 MiB event, chunked vs whole"),
    "redis": (
        "bench.redis_state",
        "9 Redis state: round trips, added cost vs the file, contention",
    ),
    "quality": ("bench.quality", "9 help-centre quality: recall within a budget vs page BM25"),
    "scale": ("bench.scale", "10 help-centre speed and memory: index, warm question, edit"),
    "handoff": (
        "bench.handoff",
        "13 help-centre handoff: the relevance floor on unanswerable and answerable questions",
    ),
    "batch": ("bench.batch", "11 batch -j 8 vs xargs -P 8 on one input; peak RSS by size"),
    "deadlines": (
        "bench.deadlines",
        "12 deadlines: a healthy question vs the tree before them; how late one fires",
    ),
    "masking": ("bench.masking", "13 masking: recall, false positives, cost per message"),
    "language": ("bench.language", "14 language: accuracy on short messages, load, detection"),
    "followups": ("bench.followups", "15 follow-ups: answering-page recall with the thread"),
    "provider-batch": (
        "bench.provider_batch",
        "17 provider batch: our CPU per question to send and collect a Batch API job",
    ),
    "offline": (
        "bench.offline",
        "16 offline answers: from the answering page, never a navigation page, or a handoff",
    ),
    "fleet": (
        "bench.fleet",
        "18 a fleet within its quota: 429s, the quota used, retries under a partial outage",
    ),
    "parsers": ("bench.parsers", "19 HTML parsers: same passages, reading speed, memory, import"),
    "speedpass": (
        "bench.speedpass",
        "20 large help centres vs the tree before: first index, refresh, warm question by size",
    ),
    "firstcut": (
        "bench.firstcut",
        "21 the index's first cut vs ranking every passage: prompts, handoffs, offline answers",
    ),
    "semantic": (
        "bench.semantic",
        "22 a semantic model shipped in its wheel: the ranker's first choice, the handoff",
    ),
    "stops": (
        "bench.stops",
        "23 stopping a first index: Ctrl-C, SIGTERM, SIGHUP to its process group, vs before",
    ),
}


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs ({cpu}); "
        f"Python {platform.python_version()} ({_interpreter()}); {platform.platform()}"
    )


def _interpreter() -> str:
    """The interpreter as the results may name it: relative to the checkout (`.venv/...`),
    else by its name alone, never a path of the machine that ran it."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(Path(__file__).resolve().parent.parent))
    except ValueError:
        return exe.name


def bypass_proxies_for_loopback() -> None:
    """Every server the benchmarks talk to is on 127.0.0.1; a proxy configured in the
    environment (HTTP_PROXY, ...) must not be asked to reach it. Children inherit this."""
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        os.environ[name] = ",".join(p for p in (current, "127.0.0.1,localhost") if p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny iteration counts (CI)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHMARKS))
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    names = args.names or list(BENCHMARKS)
    bypass_proxies_for_loopback()

    print(f"# {'smoke run' if args.smoke else 'benchmarks'}: {machine()}", flush=True)
    rows: list[Row] = []
    crashed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="support-ask-bench-") as scratch:
        ctx = Context(smoke=args.smoke, sizes=SMOKE if args.smoke else FULL, scratch=Path(scratch))
        for name in names:
            module, what = BENCHMARKS[name]
            print(f"# {what} ...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            try:
                rows += importlib.import_module(module).run(ctx)
            except Exception:
                crashed.append(name)
                traceback.print_exc()
                print(f"# {name}: CRASHED (above)", file=sys.stderr, flush=True)
            else:
                took = time.perf_counter() - started
                print(f"#   {name} took {took:.1f} s", file=sys.stderr, flush=True)

    print(render(rows, markdown=args.markdown))
    misses = [r for r in rows if r.verdict is Verdict.MISS]
    print(
        f"\n{len(rows)} figures; {sum(r.verdict is Verdict.PASS for r in rows)} PASS, "
        f"{len(misses)} MISS" + (f"; CRASHED: {', '.join(crashed)}" if crashed else "")
    )
    if args.json:
        args.json.write_text(json.dumps([_row_json(r) for r in rows], indent=1) + "\n")
    if crashed:
        return 1
    regressed = [r.name for r in misses if r.group == GATE]
    if regressed:
        print(f"REGRESSED against the baseline tree: {', '.join(regressed)}")
        return 3
    return 0


def _row_json(row: Row) -> dict[str, object]:
    def summary(s: object) -> object:
        return None if s is None else s.__dict__

    return {
        "group": row.group,
        "name": row.name,
        "unit": str(row.unit),
        "candidate": summary(row.cand),
        "baseline": row.base_name or None,
        "baseline_summary": summary(row.base),
        "ratio": None if row.ratio != row.ratio else row.ratio,
        "value": row.value,
        "base_value": row.base_value,
        "target": None if row.target is None else row.target.text,
        "verdict": str(row.verdict),
        "note": row.note,
    }


if __name__ == "__main__":
    sys.exit(main())
