"""12 deadlines: what the first-token and stall deadlines cost a healthy
question, and how close to its setting a first-token deadline fires.

- A healthy question, in-process: the engine and the real OpenAI adapter (kept across
  questions), whole and streamed, against the loopback server in a child process; this
  tree against the tree before any deadline work (88fa2bb), and the commit that brought the
  deadlines against its parent (`COMPARISONS`; each exported with `git archive` into the
  scratch folder). Two versions of the code cannot share one
  interpreter, so each side is a worker process (`bench/deadline_worker.py`) timing a
  batch of questions; the sides take turns, round after round, who goes first flipping,
  and the medians are over every question of every round.
- The deadline firing: over real sockets, a server that sends a stream's headers and
  then nothing (and, for a whole reply, nothing at all); the adapter called with
  first_token_timeout T. Candidate: the elapsed time; baseline: T itself, so "added" is
  how late the deadline fired.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.context import Context
from bench.inproc import ServerProcess
from bench.stats import Measure, Row, Summary, Target, Unit
from bench.trees import exported

GROUP = "12 deadlines"
# (what is measured, its commit (None: this tree), the baseline commit). The first is
# "today" (the tree before any of the deadline work); the second isolates the commit that
# brought the deadlines, against its parent, so the other teams' changes since are not in it.
COMPARISONS = (
    ("this tree", None, "88fa2bb"),
    ("the deadlines commit 96a1ada", "96a1ada", "80b371a"),
)
ROOT = Path(__file__).resolve().parent.parent
FIRST_TOKEN_S = 0.2
NOTHING_ADDED = Target("<= 5% median added (nothing measurable)", ((Measure.RATIO, 1.05),))
FIRES_ON_TIME = Target(
    "fires within 100 ms of its setting",
    ((Measure.ADDED_MEDIAN, 0.1), (Measure.ADDED_P99, 0.1)),
)


def _tree(ctx: Context, commit: str) -> Path:
    return exported(ctx, commit, "deadlines")


def _batch(root: Path, base_url: str, n: int, mode: str) -> list[float]:
    worker = ROOT / "bench" / "deadline_worker.py"
    out = subprocess.run(
        [sys.executable, str(worker), str(root), base_url, str(n), mode],
        check=True,
        capture_output=True,
        text=True,
        cwd=root,
    ).stdout
    took: list[float] = json.loads(out)
    return took


def _healthy(ctx: Context) -> list[Row]:
    rows = []
    for name, cand_commit, base_commit in COMPARISONS:
        try:
            cand_root = ROOT if cand_commit is None else _tree(ctx, cand_commit)
            base_root = _tree(ctx, base_commit)
        except (OSError, subprocess.CalledProcessError):
            # A checkout without those commits (a shallow clone): nothing to compare with.
            note = f"skipped: commit {base_commit} is not in this checkout"
            rows.append(Row(GROUP, name, Unit.MICROS, note=note))
            continue
        rows += _compare(ctx, name, cand_root, base_root, base_commit)
    return rows


def _compare(ctx: Context, name: str, cand_root: Path, base_root: Path, base: str) -> list[Row]:
    rounds = max(2, ctx.sizes.proc_rounds)
    per_round = max(20, ctx.sizes.inproc_iterations // 40)
    rows = []
    with ServerProcess() as server:
        for mode in ("whole", "stream"):
            cand: list[float] = []
            base_took: list[float] = []
            for i in range(rounds):
                sides = ((cand_root, cand), (base_root, base_took))
                for root, out in sides if i % 2 == 0 else sides[::-1]:
                    out.extend(_batch(root, server.base_url, per_round, mode))
            rows.append(
                Row(
                    GROUP,
                    f"healthy question, {mode}: {name}",
                    Unit.MICROS,
                    Summary.of(cand),
                    Summary.of(base_took),
                    f"the same at {base}",
                    NOTHING_ADDED,
                )
            )
    return rows


class _Silent:
    """A server on 127.0.0.1 that reads each request and then says nothing more: after a
    stream's headers and its role chunk (`headers=True`), or at all."""

    def __init__(self, *, headers: bool) -> None:
        self._headers = headers
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._open.append(conn)
            conn.recv(65536)
            if self._headers:
                chunk = b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(chunk), chunk)
                )

    def __enter__(self) -> _Silent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()
        for conn in self._open:
            conn.close()


def _firing(ctx: Context) -> list[Row]:
    from gateway.config import Deployment
    from gateway.model import ProviderError, ProviderKind, Request, Timer
    from gateway.providers import build_provider

    request = Request(system="Be brief.", question="Where is my invoice?", max_output_tokens=50)
    rounds = max(3, ctx.sizes.proc_rounds)
    rows = []
    for stream in (True, False):
        took: list[float] = []
        with _Silent(headers=stream) as server:
            deployment = Deployment(
                "primary", ProviderKind.OPENAI, 8192, model="m", base_url=server.url
            )
            adapter = build_provider(deployment, None)
            for _ in range(rounds):
                t0 = time.perf_counter()
                try:
                    adapter.complete(
                        request,
                        timeout=10.0,
                        on_text=(lambda text: None) if stream else None,
                        first_token=FIRST_TOKEN_S,
                        stall=5.0,
                    )
                except ProviderError as err:
                    if err.failure.timer is not Timer.FIRST_TOKEN:
                        raise AssertionError(f"not the first-token deadline: {err}") from None
                else:
                    raise AssertionError("a silent server answered")
                took.append(time.perf_counter() - t0)
            close = getattr(adapter, "close", None)
            if callable(close):
                close()
        what = "stream: headers, then no text" if stream else "whole reply: no response"
        rows.append(
            Row(
                GROUP,
                f"first-token deadline fires, {what}",
                Unit.MILLIS,
                Summary.of(took),
                Summary.of([FIRST_TOKEN_S] * len(took)),
                f"its setting, {FIRST_TOKEN_S * 1000:g} ms",
                FIRES_ON_TIME,
            )
        )
    return rows


def run(ctx: Context) -> list[Row]:
    return _healthy(ctx) + _firing(ctx)
