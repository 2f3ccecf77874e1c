"""A cold fleet against a provider whose bucket is smaller than the fleet's calls at once:
several engines (processes' worth, each asking from several threads) sharing one
allowance in memory, a file or a real Redis, on the real clock (Redis keeps the server's).
Before any response's headers are read, one call goes and the others wait for it; its
headers then pace them all: no 429, with no limits set and with a limit set twice the
provider's. A first call that hangs holds the others back no longer than its expiry."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.clock import SystemClock
from gateway.config import Config, Limits, Policy
from gateway.config.location import RedisURL
from gateway.engine.loop import Engine
from gateway.limits import rules
from gateway.limits.file import FileAllowance
from gateway.limits.memory import MemoryAllowance
from gateway.limits.redis import RedisAllowance
from gateway.model import ErrorKind, Headroom, Outcome, ProviderError, Reply, Request, Window
from gateway.record import replace
from gateway.seams import Allowance
from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore
from tests.gateway.engine.test_fleet_limits import KEYS, two_on_one_key
from tests.support.fakes import answer, failure
from tests.support.fleet import limited_engine
from tests.support.limit_rules import ProviderBucket
from tests.support.redis_server import RedisServer, redis_server

ENGINES, AT_ONCE = 4, 4  # sixteen questions at once against a bucket of five
SIZE, PER_S = 5, 5.0  # the provider's: 300 a minute, one second's worth at once


@dataclass
class BucketProvider:
    """A deployment whose provider enforces `bucket` and states what is left of it, as
    OpenAI's headers do, on answers and 429s alike."""

    name: str
    bucket: ProviderBucket
    takes: float = 0.02
    hang: threading.Event | None = None  # the first call hangs until it is set
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0

    def complete(self, request: Request, *, timeout: float, **_: object) -> Reply:
        clock = SystemClock()
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first and self.hang is not None:
            self.hang.wait(10)  # past its own timeout: a call that never settles in time
            raise ProviderError(failure(ErrorKind.TIMEOUT, detail="read timed out"))
        with self.lock:
            ok = self.bucket.arrive(clock.monotonic())
            seen = Headroom(requests=Window(SIZE * 60, int(self.bucket.tokens), 1.0))
        clock.sleep(self.takes)
        if not ok:
            raise ProviderError(replace(failure(ErrorKind.RATE_LIMIT), headroom=seen))
        return replace(answer("fast answers"), headroom=seen)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def _stores(tmp_path: Path, server: RedisServer) -> dict[str, Callable[[], Allowance]]:
    shared = MemoryAllowance()

    def redis() -> Allowance:
        store = RedisStore(RedisURL.parse(server.url), fallback=MemoryStore, warn=pytest.fail)
        return RedisAllowance(store)

    return {
        "memory": lambda: shared,  # one process's engines
        "file": lambda: FileAllowance(tmp_path / "limits.json", warn=pytest.fail),
        "redis": redis,
    }


def _fleet(config: Config, make: Callable[[], Allowance], provider: BucketProvider) -> list[str]:
    """Each of `ENGINES` engines asks `AT_ONCE` questions at once; the answers' texts."""
    only_fast = replace(config, deployments=config.deployments[:1])
    answers: list[str] = []

    def ask(e: Engine) -> None:
        try:
            result = e.ask(Request("system", "How do I reset my password?", 400))
        except Exception as exc:  # shown in the comparison, not lost in a thread
            answers.append(repr(exc))
            raise
        answers.append(result.answer or "")

    threads = []
    for _ in range(ENGINES):
        clock = SystemClock()
        e = limited_engine(only_fast, make(), lambda d, key: provider, clock=clock, environ=KEYS)
        threads += [threading.Thread(target=ask, args=(e,)) for _ in range(AT_ONCE)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return answers


@pytest.mark.parametrize("store", ["memory", "file", "redis"])
@pytest.mark.parametrize("limits", [None, Limits(rpm=2 * SIZE * 60)], ids=["none", "too-high"])
def test_a_cold_fleet_meets_no_429(
    tmp_path: Path, server: RedisServer, store: str, limits: Limits | None
) -> None:
    config = two_on_one_key() if limits is None else two_on_one_key(KEY_A=limits)
    provider = BucketProvider("fast", ProviderBucket(SIZE, PER_S))
    answers = _fleet(config, _stores(tmp_path, server)[store], provider)
    assert answers == ["fast answers"] * (ENGINES * AT_ONCE)
    assert provider.bucket.refused == 0
    assert provider.calls == ENGINES * AT_ONCE  # nothing retried: no 429 to retry


def test_a_hung_first_call_holds_the_others_only_until_it_expires_and_the_table_shows_it() -> None:
    allowance, provider = MemoryAllowance(), BucketProvider("fast", ProviderBucket(SIZE, PER_S))
    hang = threading.Event()
    provider.hang = hang
    config = two_on_one_key()
    quick = replace(config.deployments[0], policy=Policy(timeout=0.5, retries=0))
    only_fast = replace(config, deployments=(quick,))
    clock = SystemClock()
    e = limited_engine(only_fast, allowance, lambda d, key: provider, clock=clock, environ=KEYS)
    request = Request("system", "How do I reset my password?", 400)
    first = threading.Thread(target=e.ask, args=(request,))
    first.start()
    while provider.calls == 0:  # the first call is out, and hangs
        clock.sleep(0.01)
    result = e.ask(request)
    hang.set()
    first.join(5)
    assert result.answer == "fast answers"
    ((waited),) = [a for a in result.attempts if a.outcome is Outcome.WAITED]
    assert "waited for the limit provider:KEY_A/m first call" in waited.detail
    # held back until the hung first call expired (its call's own timeout, under FIRST_CALL_S)
    assert 0.2 < waited.wait_s < 0.5 + 2 * rules.SLOT_POLL_S
