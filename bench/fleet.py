"""18. A fleet within its quota: `support-ask batch` processes in two homes sharing one
real redis-server, asking at once against a loopback provider that enforces a token bucket
per key, as the providers do; this tree against the tree before the shared limits (the
parent of the first commit that touched `gateway/limits`, exported with `git archive`) in
the same run, the candidates one after another.

- Quota: the key's bucket holds one second's worth and refills at `RATE` a second; every
  response carries OpenAI's rate-limit headers (`x-ratelimit-limit-requests`,
  `-remaining-requests`, `-reset-requests`). Candidates: this tree with the key's limit
  set to the quota (`keys: {KEY: {limits: {rpm}}}`), this tree with no limits (the
  provider's headers alone), and the old tree (which can only find the quota by its
  429s). Reported: the provider's 429s as a share of the requests it got (target
  <= 1 %), and the requests it accepted as a share of its quota over the run (target
  >= 90 %). Every question ends answered: `local` is the last deployment.
- Retry budget: the primary fails 30 % of its calls at random (500), a second deployment
  on the same server always answers; `policy.cooldown: 1`, so the failing primary stays in
  use. Reported: retries in place as a share of the provider's requests (target <= 10 %),
  and the share of questions answered (no lower than the old tree's).

Each process is a `batch` (`JOBS` at once) over a backlog larger than it can answer,
stopped with SIGTERM (what is in flight finishes): a fresh process per question would
spend this machine's CPU on start-ups, not on asking. Full: 4 processes for
`BENCH_FLEET_S` (default 18) seconds a candidate, five candidates, under two minutes;
smoke: 2 processes for 3 s.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.stats import Measure, Row, Target, Unit

GROUP = "18 fleet quota"
ROOT = Path(__file__).resolve().parent.parent
RATE = 5.0  # accepted requests a second, per key
BURST = RATE  # the bucket's size: one second's worth
FAIL_SHARE = 0.3
KEY = "sk-fleet-bench-0000000000000000"
BATCH = (sys.executable, "-m", "cli", "batch")
JOBS = 4  # questions in flight in each process
BACKLOG = 5000
TARGET_429 = Target.at_most(Measure.TOTAL, 0.01, "<= 1 % of requests")
TARGET_QUOTA = Target.at_least(">= 90 % of the quota", (Measure.TOTAL, 0.90))
TARGET_RETRIES = Target.at_most(Measure.TOTAL, 0.10, "<= 10 % of requests")

_COMPLETION = json.dumps(
    {
        "id": "chatcmpl-fleet",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Open Settings, then Security."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 300, "completion_tokens": 8, "total_tokens": 308},
    }
).encode()
_LIMITED = json.dumps(
    {
        "error": {
            "message": "Rate limit reached for requests. Please try again in 333ms.",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
).encode()
_BROKEN = json.dumps(
    {"error": {"message": "The server had an error", "type": "server_error"}}
).encode()


class Provider:
    """The loopback provider: a token bucket per key (its Authorization header), told in
    OpenAI's headers on every response; with `fail_share`, that share of the calls to
    `primary-model` fail (500) and nothing is rate-limited."""

    def __init__(self, fail_share: float = 0.0, seed: int = 7) -> None:
        self.fail_share = fail_share
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self.accepted = self.limited = self.failed = 0
        self.limited_at: list[float] = []  # each 429, seconds after the first request
        self.first = self.last = 0.0
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, data, headers = provider.decide(self.headers.get("Authorization", ""), body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def decide(self, key: str, body: dict[str, object]) -> tuple[int, bytes, dict[str, str]]:
        with self.lock:
            now = time.monotonic()
            self.first = self.first or now
            self.last = now
            if self.fail_share:
                if body.get("model") == "primary-model" and self.rng.random() < self.fail_share:
                    self.failed += 1
                    return 500, _BROKEN, {}
                self.accepted += 1
                return 200, _COMPLETION, {}
            tokens, at = self.buckets.get(key, (BURST, now))
            tokens = min(BURST, tokens + (now - at) * RATE)
            ok = tokens >= 1.0
            tokens -= 1.0 if ok else 0.0
            self.buckets[key] = (tokens, now)
            headers = {
                "x-ratelimit-limit-requests": str(int(RATE * 60)),
                "x-ratelimit-remaining-requests": str(int(tokens)),
                "x-ratelimit-reset-requests": f"{(BURST - tokens) / RATE * 1000:.0f}ms",
            }
            if not ok:
                self.limited += 1
                self.limited_at.append(now - self.first)
                return 429, _LIMITED, headers
            self.accepted += 1
            return 200, _COMPLETION, headers

    @property
    def requests(self) -> int:
        return self.accepted + self.limited + self.failed

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Candidate:
    name: str
    tree: Path
    limits: bool = False


def _config(url: str, redis: str, prefix: str, *, limits: bool, failing: bool) -> str:
    keys = f"keys:\n  FLEET_KEY: {{limits: {{rpm: {int(RATE * 60)}}}}}\n" if limits else ""
    cooldown = ", cooldown: 1" if failing else ""
    second = (
        "  - {name: second, provider: openai, model: second-model, api_key_env: FLEET_KEY,"
        f" base_url: '{url}', context_window: 128000}}\n"
        if failing
        else ""
    )
    return (
        "product: Acme\n"
        # A short cooldown keeps the failing primary in use: its failures are what the
        # retry budget is about, not a cooldown that takes it out of the run.
        f"policy: {{budget: 8, timeout: 5, backoff_base: 0.25, backoff_max: 1{cooldown}}}\n"
        f"{keys}"
        "deployments:\n"
        "  - {name: primary, provider: openai, model: primary-model, api_key_env: FLEET_KEY,"
        f" base_url: '{url}', context_window: 128000}}\n"
        f"{second}"
        "  - {name: local, provider: local}\n"
        f"state: {{url: '{redis}', prefix: {prefix}, timeout: 2, connect_timeout: 2}}\n"
        "log: {enabled: false}\n"
    )


def _home(home: Path, config: str) -> dict[str, str]:
    """A machine's home: its config, help centre and backlog; the environment its
    processes run in."""
    home.mkdir(parents=True)
    (home / "support-ask.yaml").write_text(config)
    (home / "kb").mkdir()
    (home / "kb" / "reset.md").write_text(
        "# Reset your password\n\nOpen Settings, then Security, and choose Reset password.\n"
    )
    # More than any run answers: each process works through the backlog until stopped.
    (home / "backlog.txt").write_text("How do I reset my password?\n" * BACKLOG)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("SUPPORT_ASK_") and "KEY" not in k
    }
    env.update(
        FLEET_KEY=KEY,
        SUPPORT_ASK_CONFIG=str(home / "support-ask.yaml"),
        XDG_STATE_HOME=str(home / "xdg"),
        XDG_CACHE_HOME=str(home / "xdg"),
        XDG_CONFIG_HOME=str(home / "xdg"),
    )
    return env


def _fleet(
    candidate: Candidate, folder: Path, configs: list[str], processes: int, seconds: float
) -> list[dict[str, Any]]:
    """`processes` runs of `support-ask batch` from the candidate's tree, spread over one
    home per config, each `JOBS` questions at once, stopped (SIGTERM: what is in flight
    finishes) after `seconds`; every question's record."""
    homes = [folder / f"home-{i}" for i in range(len(configs))]
    envs = [_home(home, config) for home, config in zip(homes, configs, strict=True)]
    runs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for n in range(processes):
        home, env = homes[n % len(homes)], envs[n % len(homes)]
        out = home / f"answers-{n}.jsonl"
        argv = [*BATCH, str(home / "backlog.txt"), "-a", str(home / "kb"), "--out", str(out)]
        proc = subprocess.Popen(
            [*argv, "-j", str(JOBS), "-q", "--progress-every", "0"],
            cwd=candidate.tree,  # `-m cli` finds the tree's own packages first
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        runs.append((proc, out))
    time.sleep(seconds)
    for proc, _ in runs:
        proc.terminate()
    records: list[dict[str, Any]] = []
    for proc, out in runs:
        proc.wait(timeout=60)
        lines = out.read_text().splitlines() if out.exists() else []
        records += [json.loads(line) for line in lines if line.strip()]
    return records


def _before_the_limits(ctx: Context) -> Path | None:
    """The tree before the shared limits, exported once; None when this checkout has no
    history of them (a shallow clone)."""
    log = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%H", "--", "gateway/limits"],
        capture_output=True,
        text=True,
    )
    commits = log.stdout.split()
    if log.returncode != 0 or not commits:
        return None
    folder = ctx.folder("fleet") / "before-the-limits"
    if not (folder / "gateway").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", f"{commits[-1]}^"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _run(
    ctx: Context,
    candidate: Candidate,
    redis: str,
    processes: int,
    seconds: float,
    *,
    failing: bool,
) -> tuple[Provider, list[dict[str, Any]]]:
    provider = Provider(fail_share=FAIL_SHARE if failing else 0.0)
    slug = candidate.name.replace(" ", "-")
    prefix = f"{'retries' if failing else 'quota'}-{slug}"
    folder = ctx.folder("fleet") / prefix
    config = _config(provider.url, redis, prefix, limits=candidate.limits, failing=failing)
    try:
        out = _fleet(candidate, folder, [config, config], processes, seconds)
    finally:
        provider.close()
    if not out:
        raise RuntimeError(f"{candidate.name}: no question was answered in {folder}")
    return provider, out


def _quota_rows(ctx: Context, old: Candidate, redis: str, procs: int, secs: float) -> list[Row]:
    new = (Candidate("limits set", ROOT, limits=True), Candidate("headers only", ROOT))
    figures: dict[str, tuple[float, float, int]] = {}
    when: dict[str, str] = {}
    for candidate in (*new, old):
        provider, _ = _run(ctx, candidate, redis, procs, secs, failing=False)
        window = max(provider.last - provider.first, 1e-9)
        quota = BURST + RATE * window
        figures[candidate.name] = (
            provider.limited / max(1, provider.requests),
            provider.accepted / quota,
            provider.requests,
        )
        # When the 429s came: a cold start's burst, or all along.
        shown = ", ".join(f"{t:.2f}" for t in provider.limited_at[:6])
        more = "..." if len(provider.limited_at) > 6 else ""
        when[candidate.name] = f"; 429s at {shown}{more} s" if shown else ""
    base = figures[old.name]
    note = (
        f"{procs} processes in 2 homes, one Redis, {secs:.0f} s; "
        f"a bucket of {BURST:.0f} at {RATE:.0f}/s"
    )
    rows: list[Row] = []
    for candidate in new:
        mine = figures[candidate.name]
        rows += [
            Row(
                GROUP,
                f"429s / requests, {candidate.name}",
                Unit.PERCENT,
                value=mine[0],
                base_value=base[0],
                base_name=old.name,
                target=TARGET_429,
                note=f"{note}; {mine[2]} vs {base[2]} requests{when[candidate.name]}",
            ),
            Row(
                GROUP,
                f"accepted / quota, {candidate.name}",
                Unit.PERCENT,
                value=mine[1],
                base_value=base[1],
                base_name=old.name,
                target=TARGET_QUOTA,
                note=note,
            ),
        ]
    return rows


def _retry_rows(ctx: Context, old: Candidate, redis: str, procs: int, secs: float) -> list[Row]:
    new = Candidate("this tree", ROOT)
    figures: dict[str, tuple[float, float, int]] = {}
    for candidate in (new, old):
        provider, out = _run(ctx, candidate, redis, procs, secs, failing=True)
        retries = sum(1 for q in out for a in q.get("attempts", []) if a.get("decision") == "retry")
        answered = sum(1 for q in out if q.get("status") == "answered")
        figures[candidate.name] = (
            retries / max(1, provider.requests),
            answered / max(1, len(out)),
            len(out),
        )
    mine, base = figures[new.name], figures[old.name]
    note = f"{procs} processes, {secs:.0f} s, {FAIL_SHARE:.0%} of primary calls fail"
    return [
        Row(
            GROUP,
            "retries / requests, 30 % failing",
            Unit.PERCENT,
            value=mine[0],
            base_value=base[0],
            base_name=old.name,
            target=TARGET_RETRIES,
            note=f"{note}; {mine[2]} vs {base[2]} questions",
        ),
        Row(
            GROUP,
            "answered / questions, 30 % failing",
            Unit.PERCENT,
            value=mine[1],
            base_value=base[1],
            base_name=old.name,
            target=Target.at_least(">= the old tree's", (Measure.ADDED_TOTAL, 0.0)),
            note=note,
        ),
    ]


def run(ctx: Context) -> list[Row]:
    if shutil.which("redis-server") is None:
        return [Row(GROUP, "not run: redis-server is not installed", Unit.COUNT)]
    tree = _before_the_limits(ctx)
    if tree is None:
        return [Row(GROUP, "skipped: no history of gateway/limits here", Unit.COUNT)]
    from bench.redis_state import _Server

    old = Candidate("before the limits", tree)
    procs, secs = (2, 3.0) if ctx.smoke else (4, float(os.environ.get("BENCH_FLEET_S", 18)))
    server = _Server(ctx.folder("fleet-redis"))
    try:
        return _quota_rows(ctx, old, server.url, procs, secs) + _retry_rows(
            ctx, old, server.url, procs, secs
        )
    finally:
        server.stop()
