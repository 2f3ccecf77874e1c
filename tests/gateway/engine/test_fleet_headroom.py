"""What a provider's rate-limit headers say is left of a key paces the fleet: with limits
configured or none, for every deployment on that key and model, whether the headers came
with an answer or with a 429; and the wait shows in the attempts table."""

from __future__ import annotations

import itertools
from pathlib import Path

from gateway.clock import VirtualClock
from gateway.config import Limits
from gateway.config.location import RedisURL
from gateway.limits.memory import MemoryAllowance
from gateway.limits.records import Claim
from gateway.limits.redis import RedisAllowance
from gateway.model import ErrorKind, Headroom, Outcome, Reply, Window
from gateway.record import replace
from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore
from tests.gateway.engine.test_fleet_limits import ask, engine, two_on_one_key
from tests.support.fakes import ScriptedProvider, answer, failure
from tests.support.redis_server import redis_server

# Another application spent the key's window: nothing left of 60 a minute, whole in 1 s.
SPENT = Headroom(requests=Window(60, 0, 1.0))
ROOMY = Headroom(Window(60, 59, 0.1), Window(150_000, 149_000, 0.4))


def said(text: str, seen: Headroom) -> Reply:
    return replace(answer(text), headroom=seen)


def waited(result: object) -> list[tuple[str, float, str]]:
    return [
        (a.deployment, round(a.wait_s, 3), a.detail)
        for a in result.attempts  # type: ignore[attr-defined]
        if a.outcome is Outcome.WAITED
    ]


def test_headers_showing_another_application_pace_a_key_with_no_limits_set() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()  # no limits anywhere: the provider's numbers are the limit
    fast = ScriptedProvider("fast", [said("one", SPENT), said("two", ROOMY), answer("three")])
    e = engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast)
    assert ask(e).answer == "one"
    second = ask(e)
    assert second.answer == "two"
    ((who, wait, detail),) = waited(second)
    assert (who, wait) == ("fast", 1.0)
    assert "provider:KEY_A/m rpm" in detail
    assert fast.calls == 2  # no 429 was spent on finding out


def test_headers_with_room_to_spare_cost_no_wait() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    fast = ScriptedProvider("fast", [said("one", ROOMY), said("two", ROOMY)])
    e = engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast)
    assert [ask(e).answer, ask(e).answer] == ["one", "two"]
    assert clock.slept == []


def test_two_deployments_on_one_key_and_model_share_what_the_provider_said() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    fast = ScriptedProvider("fast", [said("fast answers", SPENT)])
    smart = ScriptedProvider("smart", [answer("smart answers")])
    only_fast = replace(config, deployments=config.deployments[:1])
    only_smart = replace(config, deployments=config.deployments[1:2])
    ask(engine(only_fast, allowance, clock, fast))  # another process of the fleet
    result = ask(engine(only_smart, allowance, clock, smart))
    assert result.answer == "smart answers"
    assert [w[:2] for w in waited(result)] == [("smart", 1.0)]


def test_another_model_on_the_same_key_is_not_held_back() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    smart_other = replace(config.deployments[1], model="other-model")
    fast = ScriptedProvider("fast", [said("fast answers", SPENT)])
    smart = ScriptedProvider("smart", [answer("smart answers")])
    ask(engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast))
    result = ask(engine(replace(config, deployments=(smart_other,)), allowance, clock, smart))
    assert waited(result) == [] and clock.slept == []


def test_a_429_with_headers_books_the_key_ahead_for_the_next_question() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key(KEY_A=Limits(rpm=600))  # set too high: the provider allows 60
    limited = replace(failure(ErrorKind.RATE_LIMIT, retry_after=0.0), headroom=SPENT)
    fast = ScriptedProvider("fast", [limited, answer("fast answers"), answer("again")])
    e = engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast)
    first = ask(e)
    assert first.answer == "fast answers"
    # The retry waited, beyond its backoff, until the provider's window had room again.
    assert [w[0] for w in waited(first)] == ["fast"]
    assert round(sum(clock.slept), 3) == 1.0
    claim = Claim("provider:KEY_A/m", Limits(), 0)
    (use,) = allowance.usage([claim], clock.wall())
    assert use.requests_rate == 60.0  # what the provider allows, below the 600 configured
    assert ask(e).answer == "again"


def test_an_answer_without_headers_books_nothing() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    fast = ScriptedProvider("fast", [answer("one")])
    ask(engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast))
    (use,) = allowance.usage([Claim("provider:KEY_A/m", Limits(), 0)], clock.wall())
    assert (use.requests_ahead, use.requests_rate) == (0.0, 0.0)


def test_with_redis_stopped_each_process_keeps_to_its_share_of_what_the_provider_states(
    tmp_path: Path,
) -> None:
    # Two machines share the key through Redis, which then stops. The key's limit was set
    # too high (600 a minute for a fleet of two); the provider states 120, with a call's
    # room left each time: on its own, each process paces at 60 a minute, its half of the
    # provider's 120, not at the whole 120 each (which, twice over, the provider refuses).
    room = Headroom(requests=Window(120, 1, 0.5))
    config = two_on_one_key(KEY_A=Limits(rpm=600, fleet_size=2))
    only_fast = replace(config, deployments=config.deployments[:1])
    with redis_server(tmp_path / "redis") as server:
        warnings: list[str] = []
        store = RedisStore(RedisURL.parse(server.url), fallback=MemoryStore, warn=warnings.append)
        allowance = RedisAllowance(store)
        clock = VirtualClock()
        fast = ScriptedProvider("fast", [said("answer", room)], clock=clock)
        e = engine(only_fast, allowance, clock, fast)  # type: ignore[arg-type]
        assert ask(e).answer == "answer"  # through Redis
        assert warnings == []
        server.stop()
        sent = []
        for _ in range(5):
            assert ask(e).answer == "answer"
            sent.append(clock.wall())
    assert len(warnings) == 1 and "own share" in warnings[0]
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(sent)]
    assert gaps[-2:] == [round(60 / (120 / 2), 3)] * 2  # a second apart: 60 a minute
