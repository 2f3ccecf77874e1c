"""17. A backlog through a provider's Batch API: our own cost per question to send the job
and to collect it (`batch FILE --provider-batch`, then `batch --status ID`), against
`batch -j 8` answering the same file from the instant loopback server, same run.

The Batch API is the OpenAI fake of `gateway.simulate.batch`, served on 127.0.0.1 in
this process (it answers every look with the job over, so no time is spent waiting for
it): what is measured is support-ask's work, the two processes' CPU (`os.wait4`), not a
provider's queue. The candidate does more per question than the baseline (each question
is prepared twice: once to send, once to write its record, since no question text is
kept) and less (one upload and one download instead of a request each), so the ratio
says what the half price costs in our own CPU. Both outputs are checked: every question
answered, once.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.batch import write_questions
from bench.context import Context
from bench.loopback import ANSWER, Loopback
from bench.procs import RunFailed, child_env, run_once
from bench.question import KEY_ENV, config_text, write_kb
from bench.stats import Row, Summary, Unit
from gateway.simulate.batch import BatchPlan, OpenAIBatchServer

GROUP = "17 provider batch"
JOBS = 8
FULL = (1_000, 3)  # questions, rounds
SMOKE = (8, 1)


class _Served:
    """The fake Batch API behind a real HTTP server on 127.0.0.1."""

    def __init__(self) -> None:
        fake = OpenAIBatchServer(BatchPlan(looks=0, answer=lambda _q: ANSWER))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _play(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                url = f"http://{self.headers.get('host')}{self.path}"
                status, data, headers = fake.serve(self.command, url, dict(self.headers), body)
                self.send_response(status)
                for name, value in {**headers, "content-length": str(len(data))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _play

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> _Served:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _answered(out: Path, n: int, what: str) -> None:
    records = [json.loads(line) for line in out.read_text().splitlines()]
    if len({r["id"] for r in records if r["answer"] == ANSWER}) != n:
        raise RunFailed(f"{what}: {len(records)} records, not {n} answered")


def run(ctx: Context) -> list[Row]:
    n, rounds = SMOKE if ctx.smoke else FULL
    work = ctx.folder("provider-batch")
    home = ctx.folder("provider-batch-home")
    kb = write_kb(work)
    env = child_env(home, {KEY_ENV: "sk-bench-not-a-real-key"})
    questions = write_questions(work / f"q{n}.txt", n)
    out = work / "out.jsonl"
    with Loopback() as chat, _Served() as api:
        configs = {}
        for name, url in (("chat", chat.base_url), ("api", api.base_url)):
            configs[name] = work / f"{name}.yaml"
            configs[name].write_text(config_text(url, work, min_relevance=0.0))

        def common(name: str) -> list[str]:
            state = str(work / f"{name}-state.json")
            return ["--config", str(configs[name]), "--state", state, "-a", str(kb), "-q"]

        def ordinary() -> float:
            argv = [*ctx.support_ask, "batch", str(questions), "-j", str(JOBS), "-o", str(out)]
            done = run_once([*argv, "--progress-every", "0", *common("chat")], env=env, cwd=home)
            if done.code != 0:
                raise RunFailed(f"batch exited {done.code}: {done.stderr[-800:]!r}")
            _answered(out, n, "batch")
            return done.cpu

        def provider() -> float:
            send = [*ctx.support_ask, "batch", str(questions), "--provider-batch"]
            sent = run_once([*send, *common("api")], env=env, cwd=home)
            batch_id = sent.stdout.decode().strip()
            if sent.code != 0 or not batch_id:
                raise RunFailed(f"--provider-batch exited {sent.code}: {sent.stderr[-800:]!r}")
            look = [*ctx.support_ask, "batch", "--status", batch_id, "-o", str(out)]
            got = run_once([*look, *common("api")], env=env, cwd=home)
            if got.code != 0:
                raise RunFailed(f"--status exited {got.code}: {got.stderr[-800:]!r}")
            _answered(out, n, "--status")
            return sent.cpu + got.cpu

        provider()  # warm-up: byte-code and page caches
        cpus: dict[str, list[float]] = {"provider": [], "ordinary": []}
        for i in range(rounds):
            for which in ("provider", "ordinary") if i % 2 == 0 else ("ordinary", "provider"):
                cpus[which].append((provider() if which == "provider" else ordinary()) / n)
    return [
        Row(
            GROUP,
            "--provider-batch + --status: CPU per question",
            Unit.MILLIS,
            Summary.of(cpus["provider"]),
            Summary.of(cpus["ordinary"]),
            f"batch -j {JOBS} against an instant server",
            note=f"{n} questions; send and collect, two processes",
        ),
    ]
