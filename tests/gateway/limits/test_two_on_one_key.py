"""The slow start with two deployments on one key, the most common fallback config: two
models of one provider (`mini`, `big`), and a long-context deployment on `mini`'s model
(`long`), all on KEY_A. Engines (processes' worth) share the real file store or a real
Redis, on the real clock (Redis keeps the server's), and what a user would notice is
asserted: a deployment on another model of the key is neither held back by the first's
first call nor by its cooldown, while one on the same model waits for that first call
and is then paced by the figures it stated (providers limit a key per model: docs/fleet.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.clock import SystemClock
from gateway.config import Config, Deployment, Policy
from gateway.config.location import RedisURL
from gateway.engine import allowances
from gateway.engine.loop import Engine
from gateway.limits.file import FileAllowance
from gateway.limits.records import Claim, Grant, Limits
from gateway.limits.redis import RedisAllowance
from gateway.model import (
    ErrorKind,
    Failure,
    Headroom,
    Outcome,
    ProviderError,
    ProviderKind,
    Reply,
    Request,
    Result,
    Window,
)
from gateway.record import replace
from gateway.seams import Allowance
from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore
from tests.support.fakes import answer, failure
from tests.support.fleet import limited_engine
from tests.support.redis_server import redis_server

KEYS = {"KEY_A": "sk-test-aaaaaaaaaaaaaaaa"}
ONCE = Policy(retries=0)
MINI = Deployment("mini", ProviderKind.OPENAI, 128_000, ONCE, "gpt-4o-mini", "KEY_A")
BIG = Deployment("big", ProviderKind.OPENAI, 128_000, ONCE, "gpt-4o", "KEY_A")
LONG = Deployment("long", ProviderKind.OPENAI, 1_000_000, ONCE, "gpt-4o-mini", "KEY_A")
STATED = Headroom(requests=Window(300, 299, 0.2))  # OpenAI's: 300 a minute, nearly all left


def config(*deployments: Deployment) -> Config:
    return Config("Acme", deployments)


@dataclass
class Gated:
    """A deployment's provider whose first call, when `held`, waits for `go` (it is out as
    long as the test needs), then gives `first` (None: as every later call does, an answer
    stating the key's figures for the model)."""

    name: str
    first: Reply | Failure | None = None
    held: bool = False
    states: Headroom = STATED
    go: threading.Event = field(default_factory=threading.Event)
    out: threading.Event = field(default_factory=threading.Event)
    calls: int = 0

    def complete(self, request: Request, *, timeout: float, **_: object) -> Reply:
        self.calls += 1
        if self.calls == 1:
            self.out.set()
            assert not self.held or self.go.wait(10), "the test never let the first call end"
            if isinstance(self.first, Failure):
                raise ProviderError(self.first)
            if self.first is not None:
                return self.first
        return replace(answer(f"{self.name} answers"), headroom=self.states)


class Watched:
    """An allowance that says when a draw was refused because a first call is out."""

    def __init__(self, inner: Allowance) -> None:
        self.inner = inner
        self.behind = threading.Event()

    def draw(self, claims: object, **kw: object) -> Grant:
        grant: Grant = self.inner.draw(claims, **kw)  # type: ignore[arg-type]
        if grant.first_call_out:
            self.behind.set()
        return grant

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.fixture(params=["file", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Allowance]]:
    """A maker of one process's allowance, all of them sharing one ledger."""
    if request.param == "file":
        yield lambda: FileAllowance(tmp_path / "limits.json", warn=pytest.fail)
        return
    with redis_server(tmp_path / "redis") as running:

        def make() -> Allowance:
            url = RedisURL.parse(running.url)
            return RedisAllowance(RedisStore(url, fallback=MemoryStore, warn=pytest.fail))

        yield make


def engine(cfg: Config, allowance: Allowance, cooldowns: MemoryStore, *providers: Gated) -> Engine:
    by_name = {p.name: p for p in providers}
    clock = SystemClock()
    return limited_engine(
        cfg,
        allowance,
        lambda d, key: by_name[d.name],
        clock=clock,
        environ=KEYS,
        store=cooldowns,
    )


def ask(e: Engine) -> Result:
    return e.ask(Request("system", "How do I reset my password?", 400))


def waits(result: Result) -> list[str]:
    return [a.detail for a in result.attempts if a.outcome is Outcome.WAITED]


def first_out(e: Engine, gated: Gated) -> tuple[threading.Thread, list[Result]]:
    """A question of `e` whose call to `gated` is out (its provider's first call)."""
    results: list[Result] = []
    thread = threading.Thread(target=lambda: results.append(ask(e)))
    thread.start()
    assert gated.out.wait(10)
    return thread, results


def stated(allowance: Allowance, d: Deployment) -> float:
    """The requests a minute the provider stated for `d`'s key and model (0: none yet)."""
    name = allowances.provider(d, "KEY_A")
    (use,) = allowance.usage([Claim(name, Limits(), 0)], SystemClock().wall())
    return use.requests_rate


def test_another_model_of_the_key_is_not_held_back_by_the_first_call(
    store: Callable[[], Allowance],
) -> None:
    cooldowns = MemoryStore()
    mini = Gated("mini", held=True)
    big = Gated("big", states=Headroom(requests=Window(500, 499, 0.2)))  # its model's own
    one, two = store(), store()
    out, first = first_out(engine(config(MINI, BIG), one, cooldowns, mini, big), mini)
    # While mini's first call is out, a question for big on the same key goes at once.
    result = ask(engine(config(BIG, MINI), two, cooldowns, mini, big))
    mini.go.set()
    out.join(10)
    assert result.answer == "big answers"
    assert waits(result) == []
    assert first[0].answer == "mini answers" and waits(first[0]) == []
    # Each model's figures are its own: the key's are stated per model.
    assert (stated(two, MINI), stated(two, BIG)) == (300.0, 500.0)


def test_the_same_model_on_the_key_waits_for_the_first_call_then_is_paced_by_it(
    store: Callable[[], Allowance],
) -> None:
    cooldowns = MemoryStore()
    mini, long = Gated("mini", held=True), Gated("long")
    one, two = store(), Watched(store())
    out, _ = first_out(engine(config(MINI), one, cooldowns, mini, long), mini)
    e = engine(config(LONG, BIG), two, cooldowns, mini, long)
    second: list[Result] = []
    asking = threading.Thread(target=lambda: second.append(ask(e)))
    asking.start()
    assert two.behind.wait(10)  # long is held behind mini's first call ...
    mini.go.set()  # ... until it answers, stating the key's figures for the model
    out.join(10)
    asking.join(10)
    (result,) = second
    assert result.answer == "long answers"  # it waited: it did not fail over to big
    assert waits(result) == ["waited for the limit provider:KEY_A/gpt-4o-mini first call"]
    assert stated(two, LONG) == 300.0
    # From then on the model's figures pace it: no first call to wait for.
    assert waits(ask(e)) == []


@pytest.mark.parametrize(
    "fails",
    [
        failure(ErrorKind.SERVER),
        replace(failure(ErrorKind.RATE_LIMIT), headroom=Headroom(requests=Window(300, 0, 0.2))),
    ],
    ids=["server-error", "429"],
)
def test_a_failed_first_call_shuts_out_neither_the_other_model_nor_the_same_one(
    store: Callable[[], Allowance], fails: Failure
) -> None:
    cooldowns = MemoryStore()  # the fleet's cooldowns: one store, as its processes share
    mini, big, long = Gated("mini", fails), Gated("big"), Gated("long")  # mini's fails
    providers = (mini, big, long)
    first = ask(engine(config(MINI, BIG), store(), cooldowns, *providers))
    assert first.answer == "big answers"  # mini cooled; big, on the key's other model, answered
    assert waits(first) == []
    # Another process: mini is cooling; big goes at once, and so does long on mini's model
    # (its first call failed: the next goes first), neither waiting for anything.
    again = ask(engine(config(MINI, BIG), store(), cooldowns, *providers))
    assert again.answer == "big answers" and waits(again) == []
    assert [a.outcome for a in again.attempts if a.deployment == "mini"] == [Outcome.SKIPPED]
    on_model = ask(engine(config(LONG), store(), cooldowns, *providers))
    assert on_model.answer == "long answers"
    assert all("first call" not in w for w in waits(on_model))
