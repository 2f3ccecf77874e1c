"""A helper thread the tool starts never takes a stop signal, and its starter's own mask
is as it was: a process-directed SIGINT, SIGTERM or SIGHUP can then only interrupt the
main thread (gateway.clock; tests/cli/test_contract.py sends them to a real
process)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gateway.clock import STOPS, start_daemon, stops_blocked
from gateway.knowledge.reading import POOL_FILES
from tests.support.helpcentre import write_centre


def blocked_here() -> set[int]:
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


def test_a_helper_thread_blocks_the_stop_signals_and_its_starter_keeps_its_mask() -> None:
    before = blocked_here()
    seen: list[set[int]] = []
    thread = start_daemon(lambda: seen.append(blocked_here()), "test-helper")
    thread.join(10)

    assert thread.daemon and thread.name == "test-helper"
    assert seen and seen[0] >= STOPS
    assert blocked_here() == before  # the stop signals still reach the starting thread
    assert not STOPS & before


def test_a_thread_a_library_starts_inside_stops_blocked_never_takes_a_stop_signal() -> None:
    before = blocked_here()
    seen: list[set[int]] = []
    with pytest.raises(RuntimeError), stops_blocked():
        thread = threading.Thread(target=lambda: seen.append(blocked_here()))
        thread.start()
        raise RuntimeError("the library failed after starting it")
    thread.join(10)

    assert seen and seen[0] >= STOPS
    assert blocked_here() == before  # restored however the block ended


# A first index's pool in a process of its own, the fork server not started before it (as
# `Reading.each` may be called): every thread but the main one blocks the stop signals, and
# so do the pool's processes (the fork server, its workers): a Ctrl-C, a timeout's SIGTERM
# or a closed terminal's SIGHUP sent to the whole group is the main thread's to take, which
# then ends the pool (tests/cli/test_contract.py). The resource tracker ignores INT and
# TERM itself, as Python has it, and is started with HUP blocked.
_POOL = """
import os, sys
from pathlib import Path
from gateway.knowledge.files import discover
from gateway.knowledge.htmltext import standard
from gateway.knowledge.reading import Reading

def blocked(status):
    fields = dict(line.split(":\\t", 1) for line in status.read_text().splitlines())
    return int(fields["SigBlk"], 16)

def parents():
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                pass
    return out

read = Reading(standard, workers=2).each(discover([Path(sys.argv[1])])[0])
next(read)
me = os.getpid()
for task in Path("/proc/self/task").iterdir():
    print("thread" if int(task.name) != me else "main", blocked(task / "status"))
tree, mine = parents(), {me}
for _ in range(3):  # the fork server, its workers
    mine |= {pid for pid, parent in tree.items() if parent in mine}
for pid in sorted(mine - {me}):
    tracker = b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    print("tracker" if tracker else "process", blocked(Path(f"/proc/{pid}/status")))
read.close()
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_first_index_pools_threads_and_processes_never_take_a_stop_signal(
    tmp_path: Path,
) -> None:
    write_centre(tmp_path / "kb", POOL_FILES + 6, sections=12)
    done = subprocess.run(
        [sys.executable, "-c", _POOL, str(tmp_path / "kb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    masks: dict[str, list[set[int]]] = {}
    for line in done.stdout.splitlines():
        kind, mask = line.split()
        masks.setdefault(kind, []).append({n for n in range(1, 65) if int(mask) >> (n - 1) & 1})
    assert masks["thread"] and all(mask >= STOPS for mask in masks["thread"]), masks
    assert len(masks["process"]) >= 3, masks  # the fork server and two workers
    assert all(mask >= STOPS for mask in masks["process"]), masks
    assert masks["tracker"], masks
    assert all(STOPS & mask == {signal.SIGHUP} for mask in masks["tracker"]), masks
    assert not STOPS & masks["main"][0], masks  # the main thread takes them all
