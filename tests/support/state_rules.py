"""The rules every state store follows, written once as cases over the StateStore protocol:
tests/gateway/state/test_state.py runs them against the memory and file stores,
tests/gateway/state/test_state_redis.py against a real Redis. Each case gets a store whose
limits are the defaults (max_cooldown and remember: one hour)."""

from __future__ import annotations

from collections.abc import Callable

from gateway.model import CooldownBasis, ErrorKind
from gateway.seams import StateStore
from gateway.secrets.key import Secret

T = 1_700_000_000.0  # the injected wall clock
KEY = Secret("sk-test-Zq8v3KxT1mN4bR7wY2cF9hJ6")
NEW_KEY = Secret("sk-test-rotated-4bR7wY2cF9hJ6Zq8")
HOUR = 3600.0


def until_of(store: StateStore, name: str) -> float | None:
    found = [c.until for c in store.entries() if c.name == name]
    return found[0] if found else None


def a_cooldown_holds_until_it_ends_keeping_only_what_classifies_it(store: StateStore) -> None:
    store.cool(
        "primary",
        until=T + 60,
        kind=ErrorKind.RATE_LIMIT,
        now=T,
        status=429,
        code="rate_limit_exceeded",
    )
    (cooldown,) = store.active(T + 59.9, {}).values()
    assert (cooldown.name, cooldown.deployment, cooldown.kind) == (
        "primary",
        "primary",
        ErrorKind.RATE_LIMIT,
    )
    assert (cooldown.status, cooldown.code, cooldown.trips) == (429, "rate_limit_exceeded", 1)
    assert (cooldown.started, cooldown.until) == (T, T + 60)
    assert store.active(T + 60, {}) == {}
    assert [c.name for c in store.entries()] == ["primary"], "ended ones still listed"


def a_shorter_cooldown_never_shortens_a_longer_one(store: StateStore) -> None:
    store.cool("primary", until=T + 300, kind=ErrorKind.QUOTA, now=T, status=402)
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T + 1, status=429)
    (cooldown,) = store.active(T + 100, {}).values()
    assert (cooldown.until, cooldown.kind, cooldown.status) == (T + 300, ErrorKind.QUOTA, 402)


def a_longer_cooldown_replaces_with_its_own_kind(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T, status=429)
    store.cool("primary", until=T + 600, kind=ErrorKind.SERVER, now=T + 5, status=502)
    (cooldown,) = store.active(T + 100, {}).values()
    assert (cooldown.until, cooldown.kind, cooldown.status, cooldown.started) == (
        T + 600,
        ErrorKind.SERVER,
        502,
        T + 5,
    )
    assert cooldown.trips == 1, "a cooldown extended while in force is not a new trip"


def clear_forgets_one_or_all(store: StateStore) -> None:
    for name in ("a", "b", "c"):
        store.cool(name, until=T + 60, kind=ErrorKind.SERVER, now=T)
    store.clear("b")
    assert sorted(store.active(T, {})) == ["a", "c"]
    store.clear("not-there")
    assert sorted(store.active(T, {})) == ["a", "c"]
    store.clear()
    assert store.active(T, {}) == {} and store.entries() == []


def a_cooldown_bound_to_a_key_ends_when_the_key_changes(store: StateStore) -> None:
    store.cool("key:OPENAI_API_KEY", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    name = "key:OPENAI_API_KEY"
    assert name in store.active(T + 1, {name: KEY})
    assert name in store.active(T + 1, {name: Secret(KEY.reveal())})
    assert store.active(T + 1, {name: NEW_KEY}) == {}, "a rotated key gets a new chance"
    assert store.active(T + 1, {name: None}) == {}
    assert store.active(T + 1, {}) == {}
    assert KEY.reveal() not in repr(store.entries())


def a_cooldown_without_a_key_holds_whatever_the_key(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T)
    assert "primary" in store.active(T, {"primary": NEW_KEY})
    assert "primary" in store.active(T, {"primary": None})


def after_a_key_rotation_a_new_shorter_cooldown_is_not_lost(store: StateStore) -> None:
    store.cool("primary", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    store.cool("primary", until=T + 70, kind=ErrorKind.RATE_LIMIT, now=T + 10)
    (cooldown,) = store.active(T + 20, {"primary": NEW_KEY}).values()
    assert (cooldown.kind, cooldown.until) == (ErrorKind.RATE_LIMIT, T + 70)


def a_cooldown_bound_to_the_same_key_only_extends(store: StateStore) -> None:
    store.cool("primary", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    store.cool("primary", until=T + 60, kind=ErrorKind.AUTH, now=T + 1, credential=KEY)
    assert until_of(store, "primary") == T + 3600


def a_cooldown_already_over_is_not_recorded(store: StateStore) -> None:
    store.cool("primary", until=T - 1, kind=ErrorKind.SERVER, now=T)
    assert store.entries() == []


def a_deadline_beyond_the_cap_is_capped(store: StateStore) -> None:
    week = 7 * 86400
    store.cool("primary", until=T + week, kind=ErrorKind.RATE_LIMIT, now=T, cap=600)
    (cooldown,) = store.active(T, {}).values()
    assert cooldown.until == T + 600 and cooldown.basis is CooldownBasis.CAPPED
    store.cool("other", until=T + week, kind=ErrorKind.RATE_LIMIT, now=T)
    assert until_of(store, "other") == T + HOUR, "the store's own max_cooldown caps too"


def a_failure_after_a_cooldown_ended_doubles_the_next_one(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    # It ended; the probe failed at T+61 and policy asks for 60 s again: it gets 120 s.
    store.cool("primary", until=T + 121, kind=ErrorKind.SERVER, now=T + 61)
    (c,) = store.active(T + 62, {}).values()
    assert (c.until, c.trips, c.basis) == (T + 181, 2, CooldownBasis.ESCALATED)
    store.cool("primary", until=T + 242, kind=ErrorKind.SERVER, now=T + 182)
    (c,) = store.active(T + 183, {}).values()
    assert (c.until, c.trips) == (T + 182 + 240, 3)
    # ... doubling up to the cap, never past it.
    store.cool("primary", until=T + 500, kind=ErrorKind.SERVER, now=T + 440, cap=300)
    (c,) = store.active(T + 441, {}).values()
    assert (c.until, c.trips) == (T + 740, 4)
    store.clear("primary")
    store.cool("primary", until=T + 900, kind=ErrorKind.SERVER, now=T + 840)
    (c,) = store.active(T + 841, {}).values()
    assert (c.until, c.trips) == (T + 900, 1), "a success starts the count again"


def failures_while_a_cooldown_holds_are_not_a_new_trip(store: StateStore) -> None:
    # Two machines failing together both write: that is one outage, not a failed probe.
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    store.cool("primary", until=T + 61, kind=ErrorKind.SERVER, now=T + 1)
    (c,) = store.active(T + 2, {}).values()
    assert (c.until, c.trips) == (T + 61, 1)


def an_ended_cooldown_awaits_its_probe_then_is_forgotten(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    seen = store.read(T + 30, {})
    assert list(seen.cooling) == ["primary"] and dict(seen.due) == {}
    seen = store.read(T + 61, {})
    assert dict(seen.cooling) == {} and list(seen.due) == ["primary"]
    assert store.read(T + 60 + HOUR + 1, {}).due == {}, "remembered for an hour, no longer"


def one_lease_at_a_time_until_it_expires(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert store.lease("primary", now=T + 61, ttl=20)
    assert "primary" in store.read(T + 62, {}).probing
    assert not store.lease("primary", now=T + 62, ttl=20), "the probe is someone else's"
    assert store.lease("primary", now=T + 82, ttl=20), "a lease that ran out is free again"


def a_success_ends_the_probe_and_its_lease(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert store.lease("primary", now=T + 61, ttl=20)
    store.clear("primary")
    seen = store.read(T + 62, {})
    assert (dict(seen.cooling), dict(seen.due), seen.probing) == ({}, {}, frozenset())


def a_failed_probe_ends_its_lease_and_cools_again(store: StateStore) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert store.lease("primary", now=T + 61, ttl=20)
    store.cool("primary", until=T + 122, kind=ErrorKind.SERVER, now=T + 62)
    seen = store.read(T + 63, {})
    assert list(seen.cooling) == ["primary"] and seen.probing == frozenset()


def round_robin_cursors_move_on_once_per_reader(store: StateStore) -> None:
    assert dict(store.read(T, {}, advance=["primary"]).cursors) == {"primary": 0}
    assert dict(store.read(T, {}, advance=["primary"]).cursors) == {"primary": 1}
    assert dict(store.read(T, {}, advance=["primary", "b"]).cursors) == {"primary": 2, "b": 0}
    assert dict(store.read(T, {}).cursors) == {}


RULE_CASES: tuple[Callable[[StateStore], None], ...] = (
    a_cooldown_holds_until_it_ends_keeping_only_what_classifies_it,
    a_shorter_cooldown_never_shortens_a_longer_one,
    a_longer_cooldown_replaces_with_its_own_kind,
    clear_forgets_one_or_all,
    a_cooldown_bound_to_a_key_ends_when_the_key_changes,
    a_cooldown_without_a_key_holds_whatever_the_key,
    after_a_key_rotation_a_new_shorter_cooldown_is_not_lost,
    a_cooldown_bound_to_the_same_key_only_extends,
    a_cooldown_already_over_is_not_recorded,
    a_deadline_beyond_the_cap_is_capped,
    a_failure_after_a_cooldown_ended_doubles_the_next_one,
    failures_while_a_cooldown_holds_are_not_a_new_trip,
    an_ended_cooldown_awaits_its_probe_then_is_forgotten,
    one_lease_at_a_time_until_it_expires,
    a_success_ends_the_probe_and_its_lease,
    a_failed_probe_ends_its_lease_and_cools_again,
    round_robin_cursors_move_on_once_per_reader,
)
