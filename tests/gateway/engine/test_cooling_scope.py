"""What failed is what cools, in-process: every class of failure on `primary`,
for two deployments on one key, on two keys, and two keys on one deployment. Which
deployments are called with which key, what is cooled and for how long, and what the next
question skips (scripted providers, virtual time)."""

from __future__ import annotations

import re

import pytest

from gateway.engine.credentials import key_name
from gateway.model import ErrorKind, Outcome, Status
from gateway.state.memory import MemoryStore
from tests.gateway.engine.test_engine import Harness
from tests.support.cooling_table import (
    CASES,
    LAYOUTS,
    Case,
    Layout,
    Scope,
    expected_calls,
    expected_cooled,
    grouped,
)
from tests.support.fakes import answer, failure


def harness(case: Case, layout: Layout, store: MemoryStore | None = None) -> Harness:
    return Harness(
        {"primary": [case.failure] * 20, "fallback": [answer("from fallback")] * 5},
        config=layout.config(),
        environ=layout.environ,
        store=store,
    )


def called(result) -> list[tuple[str, str | None, int]]:  # type: ignore[no-untyped-def]
    return grouped(
        [(a.deployment, a.key) for a in result.attempts if a.outcome is not Outcome.SKIPPED]
    )


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_what_failed_is_what_cools(case: Case, layout: Layout) -> None:
    h = harness(case, layout)
    first = h.ask()
    assert called(first) == expected_calls(case, layout)
    if case.scope is Scope.NOTHING:
        assert first.status is Status.REFUSED
    else:
        assert (first.status, first.deployment) == (Status.ANSWERED, "fallback")
    entries = h.store.entries()
    assert {c.name for c in entries} == expected_cooled(case, layout)
    assert all(c.deployment == "primary" for c in entries), "nothing spread to fallback"
    assert {c.until - c.started for c in entries} <= {case.seconds}

    second = h.ask()
    if case.scope is Scope.NOTHING:
        assert called(second) == called(first), "nothing cooled: asked the same way again"
        return
    # Only primary is skipped; fallback (on the same key or not) answers again.
    assert [(a.deployment, str(a.outcome)) for a in second.attempts] == [
        ("primary", "skipped"),
        ("fallback", "answered"),
    ]
    assert second.attempts[1].key == layout.fallback_key
    skipped = second.attempts[0].detail
    if case.scope is Scope.PAIR:
        # Each key named, with its time left (less what the backoff waits took) and why.
        each = ", ".join(
            rf"{key} for \d+ s after {case.failure.kind}" for key in layout.primary_keys
        )
        assert re.fullmatch(f"every key is cooling down: {each}", skipped), skipped
    else:
        assert skipped.startswith(f"cooling down for {case.seconds:.0f} s")


def test_fallback_on_the_same_key_failing_the_same_way_cools_its_own_pair() -> None:
    shared = LAYOUTS[0]
    h = Harness(
        {"primary": [failure(ErrorKind.AUTH)], "fallback": [failure(ErrorKind.AUTH)]},
        config=shared.config(),
        environ=shared.environ,
    )
    assert h.ask().status is Status.FAILED
    assert sorted(c.name for c in h.store.entries()) == [
        key_name("fallback", "OPENAI_API_KEY"),
        key_name("primary", "OPENAI_API_KEY"),
    ]


def test_a_changed_key_value_is_a_new_chance_for_the_pair() -> None:
    shared = LAYOUTS[0]
    h = Harness(
        {"primary": [failure(ErrorKind.AUTH), answer("from primary")], "fallback": [answer("fb")]},
        config=shared.config(),
        environ=shared.environ,
    )
    assert h.ask().deployment == "fallback"
    h.environ["OPENAI_API_KEY"] = "sk-test-rotated-0123456789abcdef"
    assert h.ask().deployment == "primary"
    assert h.store.entries() == []


# -- the one probe after a pair's cooldown ----------------------------------------------------


def cooled_pair() -> Harness:
    """primary's KEY_A cooled (60 s after a 401) and over: the next call with it probes."""
    layout = LAYOUTS[2]
    h = Harness(
        {"primary": [failure(ErrorKind.AUTH), answer("from B")], "fallback": []},
        config=layout.config(),
        environ=layout.environ,
    )
    assert h.ask().attempts[-1].key == "KEY_B"
    assert [c.name for c in h.store.entries()] == [key_name("primary", "KEY_A")]
    h.clock.advance(61)
    return h


def test_when_a_pairs_cooldown_ends_one_invocation_probes_it_and_a_success_clears_it() -> None:
    h = cooled_pair()
    h.providers["primary"].script[:] = [answer("A is back")]
    result = h.ask()
    assert (result.answer, result.attempts[0].key) == ("A is back", "KEY_A")
    assert "the probe after its cooldown answered" in result.attempts[0].detail
    assert h.store.entries() == []


def test_while_another_invocation_probes_a_pair_the_others_use_the_next_key() -> None:
    h = cooled_pair()
    assert h.store.lease(key_name("primary", "KEY_A"), now=h.clock.wall(), ttl=20)
    h.providers["primary"].script[:] = [answer("from B")]
    result = h.ask()
    assert [(a.key, str(a.outcome)) for a in result.attempts] == [("KEY_B", "answered")]


def test_a_failed_pair_probe_is_one_call_and_cools_the_pair_twice_as_long() -> None:
    h = cooled_pair()
    h.providers["primary"].script[:] = [failure(ErrorKind.RATE_LIMIT), answer("from B")]
    result = h.ask()
    assert [(a.key, str(a.outcome)) for a in result.attempts] == [
        ("KEY_A", "fail_over"),
        ("KEY_B", "answered"),
    ]
    (c,) = h.store.entries()
    assert (c.name, c.until - c.started, c.trips) == (key_name("primary", "KEY_A"), 120, 2)


def test_with_its_only_key_probed_elsewhere_the_deployment_is_skipped_saying_so() -> None:
    shared = LAYOUTS[0]
    h = Harness(
        {"primary": [failure(ErrorKind.AUTH)], "fallback": [answer("fb")] * 3},
        config=shared.config(),
        environ=shared.environ,
    )
    h.ask()
    h.clock.advance(61)
    assert h.store.lease(key_name("primary", "OPENAI_API_KEY"), now=h.clock.wall(), ttl=20)
    result = h.ask()
    assert [(a.deployment, str(a.outcome)) for a in result.attempts] == [
        ("primary", "skipped"),
        ("fallback", "answered"),
    ]
    detail = result.attempts[0].detail
    assert detail == (
        "every key is cooling down: OPENAI_API_KEY: another invocation is sending the one probe"
    )


# -- records of the previous release -------------------------------------------------------


def test_a_key_wide_record_of_the_previous_release_is_dropped_silently() -> None:
    shared = LAYOUTS[0]
    store = MemoryStore()
    h = Harness(
        {"primary": [answer("from primary")], "fallback": []},
        config=shared.config(),
        environ=shared.environ,
        store=store,
    )
    now = h.clock.wall()
    from gateway.secrets.key import Secret

    key = Secret(shared.environ["OPENAI_API_KEY"])
    store.cool("key:OPENAI_API_KEY", until=now + 3600, kind=ErrorKind.AUTH, now=now, credential=key)
    result = h.ask()
    assert (result.deployment, result.attempts[0].outcome) == ("primary", Outcome.ANSWERED)
