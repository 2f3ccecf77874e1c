"""The engine within the fleet's shared limits and retry budget, in-process on a virtual
clock: a call waits for its place when that fits the budget (and the table shows the
wait), fails over at once when it does not, moves to the next key when a key's limit is
full; tokens reserved are settled with the reported usage; retries past the fleet's
budget fail over; a Retry-After's wait gets a small positive jitter."""

from __future__ import annotations

import pytest

from gateway.clock import VirtualClock
from gateway.config import Config, Deployment, Limits, Policy
from gateway.engine import allowances
from gateway.engine.loop import Engine
from gateway.limits import rules
from gateway.limits.memory import MemoryAllowance
from gateway.limits.records import Claim
from gateway.model import ErrorKind, Outcome, ProviderKind, Reply, Request, Result
from gateway.record import replace
from tests.support.fakes import ScriptedFactory, ScriptedProvider, answer, failure
from tests.support.fleet import limited_engine

KEYS = {"KEY_A": "sk-test-aaaaaaaaaaaaaaaa", "KEY_B": "sk-test-bbbbbbbbbbbbbbbb", "ANT": "sk-ant-x"}


def two_on_one_key(**key_limits: Limits) -> Config:
    """fast and smart on one OpenAI key (KEY_A, then KEY_B), then anthropic."""
    policy = Policy()
    return Config(
        "Acme",
        (
            Deployment(
                "fast", ProviderKind.OPENAI, 128_000, policy, "m", "KEY_A", ("KEY_A", "KEY_B")
            ),
            Deployment("smart", ProviderKind.OPENAI, 128_000, policy, "m", "KEY_A"),
            Deployment("anthropic", ProviderKind.ANTHROPIC, 200_000, policy, "m", "ANT"),
        ),
        key_limits=tuple(key_limits.items()),
    )


def engine(
    config: Config, allowance: MemoryAllowance, clock: VirtualClock, *providers: ScriptedProvider
) -> Engine:
    return limited_engine(config, allowance, ScriptedFactory(providers), clock=clock, environ=KEYS)


def ask(e: Engine) -> Result:
    return e.ask(Request("system", "How do I reset my password?", 400))


def scripted(*names: str) -> list[ScriptedProvider]:
    return [ScriptedProvider(n, [answer(f"{n} answers")]) for n in names]


def test_a_call_waits_for_its_place_and_the_table_shows_the_wait() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key(KEY_A=Limits(rpm=60))
    fast, smart, anthropic = scripted("fast", "smart", "anthropic")
    e = engine(config, allowance, clock, fast, smart, anthropic)
    first, second = ask(e), ask(e)
    assert first.answer == second.answer == "fast answers"
    waited = [a for a in second.attempts if a.outcome is Outcome.WAITED]
    # a second a call, and the margin a booking keeps for the call's way to the provider
    after = round(1.0 + rules.MARGIN_S, 3)
    assert [(a.deployment, a.key, round(a.wait_s, 3)) for a in waited] == [("fast", "KEY_A", after)]
    assert "key:KEY_A rpm" in waited[0].detail
    assert clock.slept == [pytest.approx(after)]


def test_two_deployments_on_one_key_share_its_limit() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key(KEY_A=Limits(rpm=60))
    (smart,) = scripted("smart")
    # fast's place is taken; smart, on the same key, then waits for the key's next one.
    e = engine(replace(config, deployments=config.deployments[1:]), allowance, clock, smart)
    allowance.draw([Claim("key:KEY_A", Limits(rpm=60), 1)], now=clock.wall(), most_wait=0, hold=1)
    result = ask(e)
    assert result.answer == "smart answers"
    assert clock.slept == [pytest.approx(1.0 + rules.MARGIN_S)]


def test_a_wait_past_the_budget_fails_over_at_once() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key(KEY_A=Limits(rpm=1), KEY_B=Limits(rpm=1))  # a place a minute
    fast, smart, anthropic = scripted("fast", "smart", "anthropic")
    e = engine(config, allowance, clock, fast, smart, anthropic)
    ask(e)  # fast with KEY_A
    ask(e)  # KEY_A is full for 60 s: fast moves to KEY_B
    result = ask(e)  # both keys full: fast and smart (KEY_A) fail over to anthropic
    assert result.answer == "anthropic answers"
    assert clock.slept == []  # no wait was taken: none fitted the 30 s budget
    rows = [(a.deployment, a.outcome, a.detail) for a in result.attempts]
    assert any("next: its key KEY_B" in d for _, o, d in rows if o is Outcome.WAITED)
    skipped = {n: d for n, o, d in rows if o is Outcome.SKIPPED}
    assert "the limit key:KEY_A rpm asks for" in skipped["smart"]
    assert "s of budget left" in skipped["smart"]
    assert (fast.calls, smart.calls, anthropic.calls) == (2, 0, 1)


def test_tokens_reserved_are_settled_with_the_reported_usage() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key(KEY_A=Limits(tpm=6000))  # 100 tokens a second
    used = Reply(text="ok", finish_reason="stop", input_tokens=40, output_tokens=10)
    fast = ScriptedProvider("fast", [used])
    e = engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast)
    ask(e)
    (use,) = allowance.usage([Claim("key:KEY_A", Limits(tpm=6000), 0)], clock.wall())
    # 50 tokens used, not the ~430 reserved (the question, the prompt, max_output_tokens)
    assert round(use.tokens_ahead, 3) == round(0.5 + rules.MARGIN_S, 3)


def test_retries_past_the_fleets_budget_fail_over_at_once() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    policy = replace(Policy(), retries=2, retry_budget=0.1)
    config = replace(
        config,
        deployments=(replace(config.deployments[0], policy=policy), config.deployments[2]),
    )
    fast = ScriptedProvider("fast", [failure(ErrorKind.SERVER)])
    anthropic = ScriptedProvider("anthropic", [answer("anthropic answers")])
    # Four processes of a fleet (each its own engine and cooldowns), one allowance.
    results = [ask(engine(config, allowance, clock, fast, anthropic)) for _ in range(4)]
    assert all(r.answer == "anthropic answers" for r in results)
    rows = [[a for a in r.attempts if a.deployment == "fast"] for r in results]
    retries = [sum(1 for a in each if a.outcome is Outcome.RETRY) for each in rows]
    # A quiet fleet allows three retries a deployment; past them fast fails over at once.
    assert retries == [2, 1, 0, 0]
    spent = [a.detail for each in rows[1:] for a in each if a.outcome is Outcome.FAIL_OVER]
    assert len(spent) == 3
    assert all("retry budget (10% of recent calls) is spent" in d for d in spent)
    assert fast.calls == 3 + 2 + 1 + 1


def test_a_retry_after_wait_gets_a_small_positive_jitter() -> None:
    clock, allowance = VirtualClock(), MemoryAllowance()
    config = two_on_one_key()
    fast = ScriptedProvider(
        "fast", [failure(ErrorKind.RATE_LIMIT, retry_after=2.0), answer("fast answers")]
    )
    e = engine(replace(config, deployments=config.deployments[:1]), allowance, clock, fast)
    assert ask(e).answer == "fast answers"
    assert clock.slept == [2.0 + 0.2 * 0.5]  # a tenth of it at most, times the draw


def test_a_batch_starts_from_the_lower_calls_at_once_of_a_deployment_and_its_first_key() -> None:
    config = two_on_one_key(KEY_A=Limits(concurrent=4), KEY_B=Limits(concurrent=1))
    fast, smart, anthropic = config.deployments
    fast = replace(fast, limits=Limits(concurrent=8))
    assert allowances.at_once(config, fast) == 4  # KEY_B is its second key: not the start
    assert allowances.at_once(config, smart) == 4
    assert allowances.at_once(config, anthropic) is None
