"""Every allowance follows the same rules (one table of cases), and each keeps its promise
where it keeps its ledger: processes sharing a file, homes sharing a real Redis, a Redis
that is down leaving each process its share."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.config.location import RedisURL
from gateway.config.model import Limits
from gateway.limits import rules
from gateway.limits.file import FileAllowance
from gateway.limits.memory import MemoryAllowance
from gateway.limits.records import EMPTY_BUCKET, Bucket, Claim
from gateway.limits.redis import RedisAllowance
from gateway.model import Headroom, Window
from gateway.seams import Allowance
from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore
from tests.support.limit_rules import LIMIT_CASES, T, near
from tests.support.paths import REPO
from tests.support.redis_server import RedisServer, free_port, redis_server

Case = Callable[[Allowance], None]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def redis_allowance(
    url: str, warn: Callable[[str], object], prefix: str = "support-ask"
) -> RedisAllowance:
    """The limits beside a Redis state store, as the CLI wires them: one connection."""
    store = RedisStore(RedisURL.parse(url), fallback=MemoryStore, warn=warn, prefix=prefix)
    return RedisAllowance(store, prefix=prefix)


@pytest.mark.parametrize("case", LIMIT_CASES, ids=lambda c: c.__name__)
def test_the_rules_hold_in_memory(case: Case) -> None:
    case(MemoryAllowance())


@pytest.mark.parametrize("case", LIMIT_CASES, ids=lambda c: c.__name__)
def test_the_rules_hold_in_a_file(tmp_path: Path, case: Case) -> None:
    case(FileAllowance(tmp_path / "limits.json", warn=pytest.fail))


@pytest.mark.parametrize("case", LIMIT_CASES, ids=lambda c: c.__name__)
def test_the_rules_hold_in_redis(server: RedisServer, case: Case) -> None:
    case(redis_allowance(server.url, pytest.fail))


def test_a_share_is_each_limit_over_the_fleet_configured_or_stated() -> None:
    claim = Claim("key:K", Limits(rpm=500, tpm=200000, concurrent=6, fleet_size=4), 10)
    assert rules.held_to(claim, EMPTY_BUCKET, alone=True) == (125, 50000, 1)
    assert rules.held_to(claim, EMPTY_BUCKET) == (500, 200000, 6)  # the fleet's, with Redis
    stated = Bucket(requests_rate=120.0, tokens_rate=40_000.0)  # below the configured
    assert rules.held_to(claim, stated, alone=True) == (30, 10_000, 1)
    few = Claim("key:K", Limits(rpm=2, fleet_size=10), 10)
    assert rules.held_to(few, EMPTY_BUCKET, alone=True).rpm == 1  # never none at all


def test_a_file_allowance_is_one_ledger_for_every_instance(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    claim = Claim("key:K", Limits(rpm=60), 10)
    draws = [FileAllowance(path).draw([claim], now=T, most_wait=30, hold=20) for _ in range(3)]
    margin = rules.MARGIN_S
    assert [g.wait for g in draws] == [near(0.0), near(1.0 + margin), near(2.0 + margin)]


def test_a_first_call_nothing_limits_yet_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    allowance = FileAllowance(path, warn=pytest.fail)
    stated_only = Claim("provider:OPENAI_API_KEY/gpt-4o-mini", Limits(), 10)  # no limits set
    for claims in ([], [stated_only], [stated_only]):
        assert allowance.draw(claims, now=T, most_wait=30, hold=20, count="retries:a").granted
    assert not path.exists()  # a healthy question neither locks nor writes the ledger


def test_first_calls_counted_in_memory_reach_the_file_with_the_next_retry(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    busy, other = FileAllowance(path, warn=pytest.fail), FileAllowance(path, warn=pytest.fail)
    for _ in range(100):
        busy.draw([], now=T, most_wait=30, hold=20, count="retries:a")
    assert busy.retry("retries:a", share=0.1, now=T)
    # The other process sees the busy one's 100 first calls: 10 % of them, one taken.
    allowed = [other.retry("retries:a", share=0.1, now=T) for _ in range(12)]
    assert allowed.count(True) == 9


def test_an_unwritable_file_keeps_this_process_to_its_share(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    warnings: list[str] = []
    allowance = FileAllowance(tmp_path / "a-file" / "limits.json", warn=warnings.append)
    claim = Claim("key:K", Limits(rpm=240, fleet_size=4), 10)  # this process: 60 a minute
    waits = [allowance.draw([claim], now=T, most_wait=30, hold=20).wait for _ in range(2)]
    assert waits == [near(0.0), near(1.0 + rules.MARGIN_S)]
    assert len(warnings) == 1 and "its own share" in warnings[0]


def test_a_redis_that_is_down_keeps_each_process_to_its_share() -> None:
    warnings: list[str] = []
    allowance = redis_allowance(f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0", warnings.append)
    claim = Claim("key:K", Limits(rpm=240, fleet_size=4), 10)
    waits = [allowance.draw([claim], now=T, most_wait=30, hold=20).wait for _ in range(3)]
    # 60 a minute: a quarter of the fleet's 240 (the margin kept once)
    assert waits == pytest.approx([0.0, 1.0 + rules.MARGIN_S, 2.0 + rules.MARGIN_S])
    assert len(warnings) == 1  # the state store's one warning, for its cooldowns and the limits
    assert "own share" in warnings[0] and "s3cret-pw" not in warnings[0]


def test_with_redis_down_the_providers_headers_still_pace_this_process() -> None:
    warnings: list[str] = []
    allowance = redis_allowance(f"redis://127.0.0.1:{free_port()}/0", warnings.append)
    provider = Claim("provider:ANTHROPIC_API_KEY/claude", Limits(), 10)
    grant = allowance.draw([provider], now=T, most_wait=30, hold=20)
    seen = Headroom(requests=Window(60, 0, 1.0))
    tightening = rules.tightening(seen, provider.name, grant.claims, ago=0.0)
    allowance.settle(grant, used=None, now=T, tightening=tightening)
    assert allowance.draw([provider], now=T, most_wait=30, hold=20).wait == 1.0
    assert len(warnings) == 1


def _calls(server: RedisServer) -> dict[str, int]:
    """Each command's calls so far, as the server counts them (a script's own commands
    are counted too, so only the commands a client sends are compared)."""
    stats = server.client().info("commandstats")  # type: ignore[attr-defined]
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def test_a_draw_is_one_round_trip_on_the_server(server: RedisServer) -> None:
    allowance = redis_allowance(server.url, pytest.fail)
    claims = [
        Claim("deployment:a", Limits(rpm=600, tpm=60000, concurrent=4), 100),
        Claim("key:K", Limits(rpm=600), 100),
    ]
    before = _calls(server)
    for _ in range(5):
        allowance.draw(claims, now=T, most_wait=30, hold=20, count="retries:a")
    after = _calls(server)
    sent = {k: after.get(k, 0) - before.get(k, 0) for k in ("evalsha", "eval", "script|load")}
    # Five draws, five EVALSHA; the script sent whole once at most (the first EVALSHA
    # finds it missing and redis-py's Script loads it), never again.
    assert sent["evalsha"] in (5, 6) and sent["eval"] + sent["script|load"] <= 1


def test_headers_tighten_in_the_settles_one_round_trip(server: RedisServer) -> None:
    allowance = redis_allowance(server.url, pytest.fail)
    provider = Claim("provider:OPENAI_API_KEY/gpt-4o", Limits(), 100)
    warm = Claim("key:WARM", Limits(rpm=600), 1)  # both scripts loaded before counting
    allowance.settle(allowance.draw([warm], now=T, most_wait=30, hold=20), used=1, now=T)

    def sent() -> int:
        return _calls(server).get("evalsha", 0)

    before = sent()
    grant = allowance.draw([provider], now=T, most_wait=30, hold=20)
    allowance.settle(grant, used=40, now=T)  # nothing limited it: nothing to settle
    assert sent() - before == 1
    seen = Headroom(Window(60, 50, 10.0), Window(90_000, 100, 60.0))  # tokens nearly spent
    tightening = rules.tightening(seen, provider.name, grant.claims, ago=0.0)
    before = sent()
    allowance.settle(grant, used=40, now=T, tightening=tightening)
    assert sent() - before == 1  # the tightening rides on the settle's one round trip
    (use,) = allowance.usage([provider], T)
    # 100 tokens left of a second's burst of 1500: the rest of it is booked.
    assert use.tokens_rate == 90_000.0 and use.tokens_ahead == near(1.0 - 100 / 1500)


_DRAWER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gateway.config.model import Limits
    from gateway.limits.records import EMPTY_BUCKET, Bucket, Claim
    where, n = sys.argv[1], int(sys.argv[2])
    if where.startswith("redis://"):
        from gateway.config.location import RedisURL
        from gateway.limits.redis import RedisAllowance
        from gateway.state.memory import MemoryStore
        from gateway.state.redis import RedisStore
        store = RedisStore(RedisURL.parse(where), fallback=MemoryStore, prefix=sys.argv[3])
        allowance = RedisAllowance(store, prefix=sys.argv[3])
    else:
        from gateway.limits.file import FileAllowance
        allowance = FileAllowance(Path(where))
    claim = Claim("key:SHARED", Limits(rpm=600), 10)
    for _ in range(n):
        grant = allowance.draw([claim], now=time.time(), most_wait=60, hold=20)
        print(repr(time.time() + grant.wait))
    """
)


def _booked(where: str, processes: int, each: int, prefix: str = "support-ask") -> list[float]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _DRAWER, where, str(each), prefix],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for _ in range(processes)
    ]
    starts: list[float] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        starts += [float(line) for line in out.split()]
    return sorted(starts)


def _ahead_of_the_rate(starts: list[float]) -> list[int]:
    """The places booked sooner than 600 a minute allows, as a token bucket of ten (one
    second's worth) refilled at ten a second: the n-th place (from 0) no sooner than
    (n - 9) tenths of a second after the first (a little slack for the time between a
    draw and its print)."""
    return [i for i in range(len(starts)) if starts[i] - starts[0] < (i - 9) * 0.1 - 0.05]


@pytest.mark.slow
def test_processes_sharing_a_file_never_book_past_the_limit(tmp_path: Path) -> None:
    starts = _booked(str(tmp_path / "limits.json"), processes=4, each=15)
    assert len(starts) == 60
    # 600 a minute: ten a second at most, whichever process drew (a little slack for the
    # time between a draw and its print)
    assert _ahead_of_the_rate(starts) == []
    assert starts[-1] - starts[0] >= 4.9  # sixty places: ten at once, then fifty at ten a second


@pytest.mark.slow
def test_two_homes_sharing_a_redis_never_book_past_the_limit(server: RedisServer) -> None:
    starts = _booked(server.url, processes=4, each=15, prefix="team")
    assert len(starts) == 60
    assert _ahead_of_the_rate(starts) == []
    assert starts[-1] - starts[0] >= 4.9
