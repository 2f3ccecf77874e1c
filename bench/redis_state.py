"""9. The state in Redis, against a redis-server this benchmark starts on a free
loopback port, beside the file store measured in the same run.

- Round trips: one whole question through the real engine (an in-memory provider that
  answers), counted on the server (`INFO commandstats`, the INFO calls themselves taken
  out): what a question that goes well costs Redis. Target: at most 2.
- A question's state work in a fresh process: connect, read every deployment's and key's
  record, then close; against the file store's read of the same state (3 cooldowns of
  other deployments in both). Target: <= 1 ms median added.
- Contention: P processes (16 in a full run) x N extending updates (200) through Redis,
  each checking its previous update before the next; at the end every worker's last
  deadline must be there. Target: 0 lost.
- A plain question with no Redis configured is benchmark 2's row: redis is never
  imported then (a test asserts it).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.procs import together
from bench.stats import Measure, Row, Summary, Target, Unit, paired

GROUP = "9 Redis state"
ROUND_TRIPS = Target.at_most(Measure.TOTAL, 2, "<= 2 round trips")
ADDED = Target.at_most(Measure.ADDED_MEDIAN, 1e-3, "<= 1 ms added")
LOST = Target.at_most(Measure.TOTAL, 0, "0 lost")
ROOT = Path(__file__).resolve().parent.parent
NAMES = (
    "primary",
    "fallback",
    "local",
    "key:primary/OPENAI_API_KEY",
    "key:fallback/ANTHROPIC_API_KEY",
)

WORKER = """
import json, sys, time
from pathlib import Path
from gateway.model import ErrorKind
from gateway.state.file import FileStore
from gateway.config.location import RedisURL
from gateway.state.redis import RedisStore

url, name, n, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
warnings = []
store = RedisStore(RedisURL.parse(url), fallback=lambda: FileStore(Path("/nonexistent/x")),
                   warn=warnings.append, known={name}, connect_timeout=5, timeout=5)
print("ready", flush=True)
sys.stdin.readline()
times, lost = [], 0
for i in range(n):
    if i:
        (seen,) = [c.until for c in store.entries() if c.name == name] or [None]
        lost += seen is None or seen < first + i - 1
    t0 = time.perf_counter()
    store.cool(name, until=first + i, kind=ErrorKind.RATE_LIMIT, now=time.time(), status=429)
    times.append(time.perf_counter() - t0)
print(json.dumps({"times": times, "lost": lost, "warnings": warnings}), flush=True)
"""


class _Server:
    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        self.client = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def calls(self) -> int:
        """Commands the server has run, the INFO asking for them not counted."""
        stats = self.client.info("commandstats")
        return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _stores(ctx: Context, url: str) -> tuple[Any, Any]:
    from gateway.config.location import RedisURL
    from gateway.model import ErrorKind
    from gateway.state.file import FileStore
    from gateway.state.redis import RedisStore

    folder = ctx.folder("redis-state")
    file_store = FileStore(folder / "cooldowns.json", known=NAMES)
    redis_store = RedisStore(RedisURL.parse(url), fallback=lambda: file_store, known=NAMES)
    now = time.time()
    for store in (file_store, redis_store):
        for i in range(3):  # lived-in: other deployments cooling down
            store.cool(f"other-{i}", until=now + 600, kind=ErrorKind.RATE_LIMIT, now=now)
    redis_store.close()
    return file_store, redis_store


def _round_trips(server: _Server) -> Row:
    from bench.inproc import _config, _engine, _InMemoryProvider
    from bench.loopback import ANSWER
    from gateway.config.location import RedisURL
    from gateway.model import Reply, Request
    from gateway.state.redis import RedisStore

    provider = _InMemoryProvider(Reply(text=ANSWER, finish_reason="stop", model="gpt-4o-mini"))
    config = _config("http://127.0.0.1:9/v1")  # never called: the provider is in memory
    from gateway.engine.credentials import record_names

    # As the CLI opens it: knowing every name the config can have a record under.
    store = RedisStore(
        RedisURL.parse(server.url),
        fallback=lambda: None,  # type: ignore[arg-type,return-value]
        known=record_names(config),
    )
    engine = _engine(config, lambda d, k: provider, store)
    request = Request("You answer support questions.", "How do I reset my password?", 400)
    before = server.calls()
    result = engine.ask(request)
    used = server.calls() - before
    if result.answer != ANSWER:
        raise AssertionError(f"the engine did not answer: {result.as_json()}")
    store.close()
    return Row(GROUP, "commands (round trips) for a question that goes well", Unit.COUNT,
               value=used, target=ROUND_TRIPS, note="INFO commandstats: one MGET")  # fmt: skip


def _state_work(ctx: Context, server: _Server) -> Row:
    from gateway.config.location import RedisURL
    from gateway.engine.credentials import key_name
    from gateway.secrets.key import Secret
    from gateway.state.redis import RedisStore

    file_store, _ = _stores(ctx, server.url)
    location = RedisURL.parse(server.url)
    credentials = {name: None for name in NAMES} | {
        key_name("primary", "OPENAI_API_KEY"): Secret("sk-x")
    }

    def redis_question() -> object:
        store = RedisStore(location, fallback=lambda: file_store, known=NAMES)
        seen = store.read(time.time(), credentials)
        store.close()
        return seen

    def file_question() -> object:
        return file_store.read(time.time(), credentials)

    n = max(20, ctx.sizes.state_single)
    cand, base = paired(redis_question, file_question, n)
    return Row(GROUP, "a question's state work: connect + read (5 records)", Unit.MILLIS,
               cand, base, "the file store's read", ADDED)  # fmt: skip


def _contention(ctx: Context, server: _Server) -> list[Row]:
    s = ctx.sizes
    base = time.time() + 600
    argvs = [
        [sys.executable, "-c", WORKER, server.url, f"w{i:02d}", str(s.state_updates),
         repr(base + i / 1000)]
        for i in range(s.state_procs)
    ]  # fmt: skip
    wall, lines = together(argvs, cwd=ROOT, what="Redis")
    reports = [json.loads(line) for line in lines]
    final: dict[int, float | None] = {}
    for i in range(s.state_procs):
        raw = server.client.get(f"support-ask:cool:w{i:02d}")
        final[i] = None if raw is None else json.loads(raw)["until"]
    missing = sum(
        until is None or abs(until - (base + i / 1000 + s.state_updates - 1)) > 1e-3
        for i, until in final.items()
    )
    fell_back = sum(1 for r in reports if r["warnings"])
    lost = missing + sum(r["lost"] for r in reports) + fell_back
    shape = f"{s.state_procs} procs x {s.state_updates}"
    latencies = Summary.of([t for r in reports for t in r["times"]])
    return [
        Row(GROUP, f"RedisStore.cool, {shape}: wall / updates", Unit.MILLIS,
            Summary.of([wall / (s.state_procs * s.state_updates)])),
        Row(GROUP, "RedisStore.cool latency (one EVALSHA)", Unit.MILLIS, latencies),
        Row(GROUP, f"lost in {s.state_procs * s.state_updates} updates", Unit.COUNT,
            value=lost, target=LOST, note=f"{fell_back} workers fell back to a file"),
    ]  # fmt: skip


def run(ctx: Context) -> list[Row]:
    if shutil.which("redis-server") is None:
        # Not a crash of the benchmark: this machine has no server to measure (.ci/run
        # installs Debian's redis-server; `apt-get install redis-server` does it here).
        return [Row(GROUP, "not run: redis-server is not installed", Unit.COUNT)]
    server = _Server(ctx.folder("redis-server"))
    try:
        return [_round_trips(server), _state_work(ctx, server), *_contention(ctx, server)]
    finally:
        server.stop()
