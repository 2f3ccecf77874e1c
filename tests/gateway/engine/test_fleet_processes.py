"""A fleet: real `support-ask` processes, each with its own home and state file (each a
machine of its own), sharing one real redis-server on a free loopback port, against
provider servers on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.model import ErrorKind
from gateway.state.file import FileStore
from tests.cli.test_process import ANSWER, Providers, support_ask, support_ask_env
from tests.support.cli_runner import write_loopback_workdir
from tests.support.loopback import Exchange
from tests.support.paths import REPO
from tests.support.redis_server import RedisServer, redis_server, silent_server

pytestmark = pytest.mark.slow  # twenty processes racing, a real redis-server

ROOT = REPO
QUESTION = ("How do I reset my password?", "-a", "kb")


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def machine(
    tmp_path: Path,
    name: str,
    providers: Providers,
    redis_url: str,
    budget: int = 6,
    redis_timeout: float = 2.0,  # a busy test machine must not look like a Redis outage
    timeout: int = 3,
) -> Path:
    home = tmp_path / name
    home.mkdir()
    write_loopback_workdir(
        home, providers.server.url, ANSWER, retries=0, budget=budget, timeout=timeout
    )
    config = home / "support-ask.yaml"
    config.write_text(
        config.read_text().replace(
            "state:\n  path: state.json\n",
            f"state:\n  url: {redis_url}\n  connect_timeout: {redis_timeout}\n"
            f"  timeout: {redis_timeout}\n",
        )
    )
    return home


def test_a_cooldown_taken_on_one_machine_is_honoured_by_the_other_two(
    tmp_path: Path, providers: Providers, server: RedisServer
) -> None:
    a, b, c = (machine(tmp_path, n, providers, server.url) for n in "abc")
    providers.primary_status = 429
    first = support_ask(a, *QUESTION, "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["deployment"] == "fallback"
    assert providers.calls("/chat/completions") == 1

    for other in (b, c):
        done = support_ask(other, *QUESTION, "--json")
        assert done.returncode == 0, done.stderr
        attempts = json.loads(done.stdout)["attempts"]
        assert (attempts[0]["deployment"], attempts[0]["decision"]) == ("primary", "skipped")
        assert "cooling down" in attempts[0]["detail"]
        assert "Redis" not in done.stderr, "no warning: Redis answered"
    assert providers.calls("/chat/completions") == 1, "the outage was paid for once"
    for home in (a, b, c):
        assert not (home / "xdg" / "support-ask" / "cooldowns.json").exists(), "all in Redis"

    listed = json.loads(support_ask(c, "cooldowns", "--json").stdout)
    assert [(x["deployment"], x["error_class"], x["status"]) for x in listed] == [
        ("primary", "rate_limit", 429)
    ]
    reset = support_ask(b, "cooldowns", "reset", "primary")
    assert reset.returncode == 0, reset.stderr
    assert json.loads(support_ask(a, "cooldowns", "--json").stdout) == []


def test_config_check_says_whether_it_could_connect(
    tmp_path: Path, providers: Providers, server: RedisServer
) -> None:
    home = machine(tmp_path, "a", providers, server.url.replace("//", "//:hunter2-pw@"))
    server.client().config_set("requirepass", "hunter2-pw")  # type: ignore[attr-defined]
    done = support_ask(home, "config", "check")
    assert done.returncode == 0, done.stderr
    assert f"state: redis://127.0.0.1:{server.port}/0 (prefix support-ask): connected" in (
        done.stdout
    )
    server.stop()
    done = support_ask(home, "config", "check", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["state_reachable"] is False
    assert "not reachable" in done.stderr
    assert "hunter2-pw" not in done.stdout + done.stderr


def _time_one_question(home: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = support_ask(home, *QUESTION, "--json")
    return done, time.monotonic() - started


@pytest.mark.parametrize("trouble", ["stopped", "silent"])
def test_a_redis_that_is_down_or_silent_costs_no_question_its_budget(
    tmp_path: Path, providers: Providers, server: RedisServer, trouble: str
) -> None:
    providers.primary_status = 503
    if trouble == "stopped":
        server.stop()
        url_context = None
        url = server.url
    else:
        url_context = silent_server()
        url = url_context.__enter__()
    try:
        home = machine(tmp_path, "a", providers, url, redis_timeout=0.2)
        done, took = _time_one_question(home)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["deployment"] == "fallback"
        warnings = [line for line in done.stderr.splitlines() if "Redis" in line]
        assert len(warnings) == 1 and "local" in warnings[0], done.stderr
        assert "Traceback" not in done.stderr
        assert took < 6, f"{took:.2f} s for a question with a 6 s budget and a dead Redis"
        # The cooldown taken meanwhile lives in the local file, and the next run honours it.
        local = home / "xdg" / "support-ask" / "cooldowns.json"
        assert [c.name for c in FileStore(local).entries()] == ["primary"]
        again = support_ask(home, *QUESTION, "--json")
        assert json.loads(again.stdout)["attempts"][0]["decision"] == "skipped"
    finally:
        if url_context is not None:
            url_context.__exit__(None, None, None)


RACER = """
import sys, time
from pathlib import Path
from gateway.state.file import FileStore
from gateway.config.location import RedisURL
from gateway.state.redis import RedisStore

url, folder, index = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
store = RedisStore(RedisURL.parse(url), fallback=lambda: FileStore(folder / f"{index}.json"),
                   warn=lambda m: print("WARN", m, file=sys.stderr), known={"primary"},
                   connect_timeout=3, timeout=3)  # 20 processes on a busy machine: no fallback
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
now = time.time()
seen = store.read(now, {})
if "primary" in seen.due and "primary" not in seen.probing:
    print("probe" if store.lease("primary", now=now, ttl=30) else "skip")
else:
    print("skip")
"""


def test_the_lease_admits_one_probe_among_twenty_racing_processes(
    tmp_path: Path, server: RedisServer
) -> None:
    from gateway.config.location import RedisURL
    from gateway.state.redis import RedisStore

    store = RedisStore(RedisURL.parse(server.url), fallback=pytest.fail, warn=pytest.fail)
    now = time.time()
    store.cool("primary", until=now + 0.5, kind=ErrorKind.SERVER, now=now - 59.5)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, server.url, str(tmp_path), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for i in range(20)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 20:
        assert time.monotonic() < deadline, "the racers did not start"
        time.sleep(0.01)
    time.sleep(max(0.0, now + 0.6 - time.time()))  # the cooldown has just ended
    (tmp_path / "go").touch()
    said = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0 and "WARN" not in err, err
        said.append(out.strip())
    assert sorted(said) == ["probe"] + ["skip"] * 19


class SlowPrimary(Providers):
    """The primary takes a second before it answers (or fails): a probe in flight."""

    def handle(self, ex: Exchange) -> None:
        if ex.path.endswith("/chat/completions") and not ex.pause(1.0):
            return
        super().handle(ex)


def test_at_expiry_one_probe_among_twenty_racing_processes(
    tmp_path: Path, server: RedisServer
) -> None:
    from gateway.config.location import RedisURL
    from gateway.state.redis import RedisStore

    providers = SlowPrimary()
    providers.primary_status = 500  # still down: the probe fails, and cools it again
    with providers.server:
        # Twenty start-ups on two CPUs take seconds: neither the budget nor the probe's
        # lease (as long as an attempt may last) may run out before the probe's answer.
        homes = [
            machine(tmp_path, f"m{i:02d}", providers, server.url, budget=60, timeout=30)
            for i in range(20)
        ]
        store = RedisStore(RedisURL.parse(server.url), fallback=pytest.fail, warn=pytest.fail)
        now = time.time()
        store.cool("primary", until=now + 0.2, kind=ErrorKind.SERVER, now=now - 59.8)
        time.sleep(0.3)  # the cooldown has just ended: every process may want to probe
        racers = [
            subprocess.Popen(
                [sys.executable, "-m", "cli", *QUESTION, "--json"],
                cwd=home,
                env={**support_ask_env(home)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for home in homes
        ]
        results = []
        for racer in racers:
            out, err = racer.communicate(timeout=120)
            assert racer.returncode == 0, err
            results.append(json.loads(out))
    assert providers.calls("/chat/completions") == 1, "one probe, fleet-wide"
    assert all(r["deployment"] == "fallback" for r in results)
    details = [r["attempts"][0]["detail"] for r in results]
    assert sum("the probe after its cooldown failed" in d for d in details) == 1
    skipped = [d for d in details if "probe after" not in d]
    assert all("another invocation" in d or "cooling down" in d for d in skipped), skipped
    (record,) = [c for c in store.entries() if c.name == "primary"]
    assert record.trips == 2 and record.until - record.started == 120, "doubled"
