"""One contending process of benchmark 4: `python -m bench.state_worker PATH NAME N BASE MODE`.

It prints "ready" once imported, waits for a line on stdin (so every worker starts
together, with start-up out of the timings), then records N cooldowns for its own
deployment NAME with untils BASE, BASE+1, ... Before each update it reads the file
(lockless, outside the timing) and checks that its previous update is still there: with
extend-only untils that only this worker writes, anything lower means another process
wrote a stale copy over it, i.e. a lost update. It prints one JSON line: the time of each
update, the lost updates seen, and the reads that found an invalid file.

MODE "filestore" uses gateway.state.file.FileStore; MODE "raw" is the floor any correct
store pays: flock, read, parse, change, write a temporary file, rename.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def raw_update(path: Path) -> Callable[[str, float, float], None]:
    lock_path = path.with_name(path.name + ".lock")

    def cool(name: str, until: float, now: float) -> None:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                doc = json.loads(path.read_bytes())
            except FileNotFoundError:
                doc = {"version": 1, "cooldowns": {}}
            entries = doc["cooldowns"]
            old = entries.get(name)
            if old is None or old["until"] < until:
                entries[name] = {"until": until, "kind": "rate_limit", "started": now}
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(json.dumps(doc, indent=1).encode())
                os.replace(tmp, path)
        finally:
            os.close(fd)

    return cool


def filestore_update(path: Path) -> Callable[[str, float, float], None]:
    from gateway.model import ErrorKind
    from gateway.state.file import FileStore

    store = FileStore(path)

    def cool(name: str, until: float, now: float) -> None:
        store.cool(name, until=until, kind=ErrorKind.RATE_LIMIT, now=now, status=429)

    return cool


def read_until(path: Path, name: str) -> float | None:
    """This worker's until in the file as it is now; raises ValueError if it is not JSON."""
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    entry = doc["cooldowns"].get(name)
    return None if entry is None else float(entry["until"])


def main() -> None:
    path, name, n, base, mode = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), *sys.argv[4:6]
    cool = (filestore_update if mode == "filestore" else raw_update)(path)
    first = float(base)
    print("ready", flush=True)
    sys.stdin.readline()
    times: list[float] = []
    lost = invalid = 0
    for i in range(n):
        if i:
            try:
                seen = read_until(path, name)
            except (ValueError, KeyError, TypeError):
                invalid += 1
            else:
                if seen is None or seen < first + i - 1:
                    lost += 1
        t0 = time.perf_counter()
        cool(name, first + i, time.time())
        times.append(time.perf_counter() - t0)
    print(json.dumps({"times": times, "lost": lost, "invalid": invalid}), flush=True)


if __name__ == "__main__":
    main()
