"""4. The cooldown state file under contention, and its cost in one process.

Contention: P processes (16 in a full run) each record N cooldowns (200) for their own
deployment, all at once, on one file; rounds of FileStore and of a raw floor (flock, read,
parse, write a temporary file, rename) alternate. Time per update is the round's wall
time over its updates (what the file can sustain), and each update's own latency, lock
wait included, is shown too. No update may be lost: every worker checks its previous
update before each new one, and at the end the file must hold each deployment's last
until.

Single process: one question's state work, `active()` then an extending `cool()`, on a
file with a few entries, interleaved with the raw floor (the target: <= 1 ms).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.context import Context, filesystem
from bench.procs import together
from bench.state_worker import raw_update
from bench.stats import Measure, Row, Summary, Target, Unit, paired

GROUP = "4 state file"
PER_UPDATE = Target.at_most(Measure.MEDIAN, 2e-3, "<= 2 ms per update")
LOST = Target.at_most(Measure.TOTAL, 0, "0 lost, 0 invalid")
SINGLE = Target.at_most(Measure.MEDIAN, 1e-3, "<= 1 ms")
ROOT = Path(__file__).resolve().parent.parent


class Round:
    """One contention round's results."""

    def __init__(self, per_update: float, latencies: list[float], lost: int, invalid: int):
        self.per_update = per_update
        self.latencies = latencies
        self.lost = lost
        self.invalid = invalid


def contend(path: Path, mode: str, procs: int, updates: int) -> Round:
    # Far enough ahead that no entry expires during the run, and within max_cooldown (1 h).
    base = time.time() + 600
    argvs = [
        [sys.executable, "-m", "bench.state_worker", str(path), f"w{i:02d}", str(updates),
         repr(base + i / 1000), mode]
        for i in range(procs)
    ]  # fmt: skip
    wall, lines = together(argvs, cwd=ROOT, what=mode)
    reports = [json.loads(line) for line in lines]
    final = json.loads(path.read_bytes())["cooldowns"]
    missing = sum(
        1
        for i in range(procs)
        if final.get(f"w{i:02d}", {}).get("until") != base + i / 1000 + updates - 1
    )
    return Round(
        per_update=wall / (procs * updates),
        latencies=[t for r in reports for t in r["times"]],
        lost=missing + sum(r["lost"] for r in reports),
        invalid=sum(r["invalid"] for r in reports),
    )


def _contention(ctx: Context) -> list[Row]:
    s = ctx.sizes
    folder = ctx.folder("state")
    rounds = 1 if ctx.smoke else 3
    results: dict[str, list[Round]] = {"filestore": [], "raw": []}
    for r in range(rounds):
        for mode in ("filestore", "raw") if r % 2 == 0 else ("raw", "filestore"):
            path = folder / f"{mode}-{r}.json"
            results[mode].append(contend(path, mode, s.state_procs, s.state_updates))

    def per_update(mode: str) -> Summary:
        return Summary.of([x.per_update for x in results[mode]])

    def latency(mode: str) -> Summary:
        return Summary.of([t for x in results[mode] for t in x.latencies])

    shape = f"{s.state_procs} procs x {s.state_updates}"
    store = results["filestore"]
    bad = sum(x.lost + x.invalid for x in store)
    raw_bad = sum(x.lost + x.invalid for x in results["raw"])
    floor = "raw flock+json+rename"
    return [
        Row(GROUP, f"FileStore.cool, {shape}: wall / updates", Unit.MILLIS,
            per_update("filestore"), per_update("raw"), floor, PER_UPDATE),
        Row(GROUP, "FileStore.cool latency, lock wait included", Unit.MILLIS,
            latency("filestore"), latency("raw"), floor),
        Row(GROUP, f"lost or invalid in {len(store) * s.state_procs * s.state_updates} updates",
            Unit.COUNT, value=bad, target=LOST, note=f"raw floor: {raw_bad}"),
    ]  # fmt: skip


def _single(ctx: Context) -> list[Row]:
    """In the scratch folder (the system temp dir, on disk here) and, where there is one,
    on tmpfs: the same code with the disk taken out, which separates the store's own cost
    from the filesystem's price for creating and renaming a file."""
    places = [ctx.folder("state-single")]
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        places.append(Path(tempfile.mkdtemp(prefix="support-ask-bench-", dir=shm)))
    rows = []
    try:
        for i, folder in enumerate(places):
            cand, base = _single_in(folder, ctx.sizes.state_single)
            name = f"one process: active() + extending cool(), {filesystem(folder)}"
            rows.append(
                Row(GROUP, name, Unit.MILLIS, cand, base, "raw read + flock+json+rename",
                    SINGLE if i == 0 else None)
            )  # fmt: skip
    finally:
        for folder in places[1:]:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def _single_in(folder: Path, iterations: int) -> tuple[Summary, Summary]:
    from gateway.model import ErrorKind
    from gateway.secrets.key import Secret
    from gateway.state.file import FileStore

    store = FileStore(folder / "cooldowns.json")
    now = time.time()
    for i in range(3):
        store.cool(f"other-{i}", until=now + 3600, kind=ErrorKind.RATE_LIMIT, now=now)
    raw_path = folder / "raw.json"
    raw_path.write_bytes(json.dumps({"version": 1, "cooldowns": {}}).encode())
    raw_cool = raw_update(raw_path)
    credentials = {"primary": Secret("sk-bench"), "fallback": None, "local": None}
    until = [now + 60.0]

    def question() -> object:
        until[0] += 1  # each one extends: a real write every time
        store.active(time.time(), credentials)
        store.cool("primary", until=until[0], kind=ErrorKind.RATE_LIMIT, now=time.time())
        return None

    def floor() -> object:
        json.loads(raw_path.read_bytes())
        raw_cool("primary", until[0], time.time())
        return None

    return paired(question, floor, iterations)


def run(ctx: Context) -> list[Row]:
    return _single(ctx) + _contention(ctx)
