"""The rules every allowance follows, written once as cases over the Allowance protocol:
tests/gateway/limits/test_limits.py runs them against the memory and file allowances and a
real Redis. The Redis allowance keeps the server's time, not the one passed in, so every
case is about waits relative to the draw and holds on either clock (within `NEAR`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import pytest

from gateway.config.model import Limits
from gateway.limits import rules
from gateway.limits.records import Bound, Claim, Tightening
from gateway.model import Headroom, Window
from gateway.seams import Allowance

T = 1_700_000_000.0
NEAR = 0.1  # the Redis server's clock moves on between two draws of a case
M = rules.MARGIN_S  # a booking starts no sooner than this from now


def near(value: float) -> object:
    return pytest.approx(value, abs=NEAR)


def rpm(n: int, tokens: int = 100, name: str = "deployment:primary") -> Claim:
    return Claim(name, Limits(rpm=n), tokens)


def draw(a: Allowance, *claims: Claim, most_wait: float = 30.0, count: str | None = None):  # type: ignore[no-untyped-def]
    return a.draw(claims, now=T, most_wait=most_wait, hold=20.0, count=count)


def a_rate_a_minute_is_spaced_to_one_second_bursts(a: Allowance) -> None:
    first, second = draw(a, rpm(60)), draw(a, rpm(60))
    assert (first.granted, first.wait) == (True, near(0.0))
    assert (second.granted, second.wait) == (True, near(1.0 + M))  # a second ahead
    assert second.blocking == "deployment:primary rpm"


def a_burst_of_one_seconds_worth_less_the_margin_goes_at_once(a: Allowance) -> None:
    waits = [draw(a, rpm(600)).wait for _ in range(12)]  # ten a second
    at_once = math.floor((rules.BURST_S - M) * 10 + 1e-9)
    assert waits[:at_once] == [near(0.0)] * at_once
    assert waits[at_once] > 0
    # then one a tenth of a second: the twelfth's place is 1.2 s of the rate on, from the
    # margin, less the burst that went at once
    assert waits[-1] == near(M + 1.2 - rules.BURST_S)


class ProviderBucket:
    """A provider's limit as it enforces it: a token bucket of `size` requests, refilled at
    `per_s` a second from when the first call arrived (it is full before)."""

    def __init__(self, size: float, per_s: float) -> None:
        self.size, self.per_s = size, per_s
        self.tokens, self.at = size, None
        self.refused = 0

    def arrive(self, at: float) -> bool:
        if self.at is not None:
            self.tokens = min(self.size, self.tokens + (at - self.at) * self.per_s)
        self.at = at
        ok = self.tokens >= 1.0
        self.tokens -= 1.0 if ok else 0.0
        self.refused += 0 if ok else 1
        return ok


# A burst's calls open their connections and arrive later than the calls behind them.
COLD_S, WARM_S = 0.05, 0.01


def a_burst_past_the_providers_bucket_meets_no_429(a: Allowance) -> None:
    """Three bursts' worth drawn at once against a provider whose bucket holds one burst:
    the first burst's calls arrive `COLD_S` after they start, the rest `WARM_S`; none is
    refused, and the calls still go at the provider's rate (the margin costs one
    `MARGIN_S`, once)."""
    size, limit = 5, rpm(300)  # five a second
    starts = []
    for _ in range(3 * size):
        now = time.time()  # the Redis allowance keeps the server's, this machine's, clock
        grant = a.draw([limit], now=now, most_wait=30.0, hold=20.0)
        assert grant.granted
        starts.append(now + grant.wait)
    provider = ProviderBucket(size, size)
    arrivals = [s + (COLD_S if i < size else WARM_S) for i, s in enumerate(starts)]
    accepted = [provider.arrive(at) for at in sorted(arrivals)]
    assert provider.refused == 0 and all(accepted)
    assert starts[-1] - starts[0] == near((len(starts) - size) / size + M)


def a_draw_past_the_most_it_may_wait_is_refused_and_takes_nothing(a: Allowance) -> None:
    draw(a, rpm(60))
    draw(a, rpm(60))
    refused = draw(a, rpm(60), most_wait=1.5)
    assert (refused.granted, refused.wait) == (False, near(2.0 + M))
    assert draw(a, rpm(60)).wait == near(2.0 + M)  # the refused place is still free


def tokens_are_reserved_and_given_back_when_settled(a: Allowance) -> None:
    big = Claim("key:OPENAI_API_KEY", Limits(tpm=6000), 600)  # 100 tokens a second
    small = Claim("key:OPENAI_API_KEY", Limits(tpm=6000), 100)
    grant = draw(a, big)
    assert grant.granted
    waited = draw(a, small, most_wait=0.0)
    assert waited.wait == near(6.0 + M)  # the reservation counts
    assert (waited.allowance, waited.bound) == ("key:OPENAI_API_KEY", Bound.TPM)
    a.settle(grant, used=100, now=T)  # the provider reported 100 tokens
    assert draw(a, small).wait == near(1.0 + M)


def a_call_larger_than_the_burst_waits_for_an_empty_bucket(a: Allowance) -> None:
    claim = Claim("key:K", Limits(tpm=6000), 300)
    assert draw(a, claim).wait == near(0.0)
    assert draw(a, claim).wait == near(3.0 + M)


def calls_at_once_are_slots_released_when_settled(a: Allowance) -> None:
    claim = Claim("deployment:primary", Limits(concurrent=2), 10)
    first, second = draw(a, claim), draw(a, claim)
    third = draw(a, claim)
    assert first.granted and second.granted and not third.granted
    assert third.blocking == "deployment:primary concurrent"
    a.settle(first, used=None, now=T)
    assert draw(a, claim).granted


def two_deployments_on_one_key_share_the_keys_limit(a: Allowance) -> None:
    key = Claim("key:OPENAI_API_KEY", Limits(rpm=60), 10)
    first = draw(a, Claim("deployment:fast", Limits(rpm=600), 10), key)
    other = draw(a, Claim("deployment:smart", Limits(rpm=600), 10), key)
    assert first.wait == near(0.0)
    assert (other.wait, other.blocking) == (near(1.0 + M), "key:OPENAI_API_KEY rpm")


def a_draw_takes_its_place_in_every_allowance_or_in_none(a: Allowance) -> None:
    key = Claim("key:K", Limits(rpm=60), 10)
    draw(a, key)
    draw(a, key)  # the key is booked two seconds ahead
    deployment = Claim("deployment:primary", Limits(rpm=60), 10)
    assert not draw(a, deployment, key, most_wait=0.5).granted
    assert draw(a, deployment).wait == near(0.0)  # the deployment gave nothing up


def the_retry_budget_is_a_share_of_recent_first_calls(a: Allowance) -> None:
    allowed = [a.retry("retries:primary", share=0.1, now=T) for _ in range(5)]
    assert allowed == [True, True, True, False, False]  # a quiet fleet: a few retries
    for _ in range(100):
        draw(a, count="retries:primary")
    more = [a.retry("retries:primary", share=0.1, now=T) for _ in range(10)]
    assert more.count(True) == pytest.approx(7, abs=1)  # 10 % of 100, 3 taken already
    assert a.retry("retries:other", share=0.1, now=T)  # each deployment its own


def usage_shows_what_is_booked_and_in_flight(a: Allowance) -> None:
    claim = Claim("deployment:primary", Limits(rpm=60, tpm=6000, concurrent=5), 600)
    draw(a, claim)
    (use,) = a.usage([claim], T)
    assert (use.name, use.in_flight) == ("deployment:primary", 1)
    assert (use.requests_ahead, use.tokens_ahead) == (near(1.0 + M), near(6.0 + M))


def spent(limit: int | None, remaining: int, reset_s: float | None = None) -> Headroom:
    """Headers that say `remaining` requests are left of `limit` a minute."""
    return Headroom(requests=Window(limit, remaining, reset_s))


def the_providers_numbers_limit_a_key_with_no_limits_set(a: Allowance) -> None:
    provider = Claim("provider:OPENAI_API_KEY/gpt-4o", Limits(), 100)
    first = draw(a, provider)
    assert first.granted and first.claims == ()  # nothing limits it yet: nothing booked
    # Another application spent the key's window: none left of 60 a minute.
    tightening = rules.tightening(spent(60, 0, 1.0), provider.name, first.claims, ago=0.0)
    assert tightening is not None
    a.settle(first, used=None, now=T, tightening=tightening)
    waits = [draw(a, provider) for _ in range(2)]
    assert [g.wait for g in waits] == [near(1.0), near(2.0)]  # the provider's 60 a minute
    assert waits[0].blocking == "provider:OPENAI_API_KEY/gpt-4o rpm"
    (use,) = a.usage([provider], T)
    assert use.requests_rate == 60.0


def what_another_application_used_books_the_bucket_ahead(a: Allowance) -> None:
    provider = Claim("provider:OPENAI_API_KEY/gpt-4o", Limits(), 100)
    known = Tightening(provider.name, requests_rate=120.0)  # its limit, stated before
    a.settle(draw(a, provider), used=None, now=T, tightening=known)
    grant = draw(a, provider)  # this call: half a second of the rate booked
    # Had the fleet been alone, one call of the burst of two would be left: nothing moves.
    alone = rules.tightening(spent(120, 1), provider.name, grant.claims, ago=0.0)
    a.settle(grant, used=None, now=T, tightening=alone)
    assert draw(a, provider).wait == near(M)
    # None is left: another application's call counted too.
    grant = draw(a, provider, most_wait=0.0)
    used = rules.tightening(spent(120, 0), provider.name, grant.claims, ago=0.0)
    a.settle(grant, used=None, now=T, tightening=used)
    assert draw(a, provider).wait == near(0.5 + M)


def a_limit_the_provider_did_not_state_is_read_against_the_configured_one(
    a: Allowance,
) -> None:
    # Azure states only what is left: read against the deployment's configured 60.
    deployment = Claim("deployment:azure-eu", Limits(rpm=60), 10)
    provider = Claim("provider:AZURE_KEY/gpt-4o", Limits(), 10)
    grant = draw(a, deployment, provider)
    tightening = rules.tightening(spent(None, 0), provider.name, grant.claims, ago=0.0)
    a.settle(grant, used=None, now=T, tightening=tightening)
    (use,) = a.usage([provider], T)
    assert (use.requests_rate, use.requests_ahead) == (60.0, near(1.0))


def the_providers_numbers_never_loosen_a_configured_limit(a: Allowance) -> None:
    key = Claim("key:OPENAI_API_KEY", Limits(rpm=60), 10)
    provider = Claim("provider:OPENAI_API_KEY/gpt-4o", Limits(), 10)
    grant = draw(a, key, provider)
    # The provider allows 6000 a minute and has nearly all of it left: its limit is
    # learnt, its bucket moves nothing, and the key's 60 still holds ...
    full = rules.tightening(spent(6000, 5990, 0.1), provider.name, grant.claims, ago=0.0)
    assert full is not None and (full.requests_ahead <= 0, full.requests_rate) == (True, 6000.0)
    a.settle(grant, used=None, now=T, tightening=full)
    (use,) = a.usage([provider], T)
    assert (use.requests_rate, use.requests_ahead) == (6000.0, near(0.0))
    grant = draw(a, key, provider)
    assert grant.wait == near(1.0 + M)  # the key's 60 a minute, not the provider's 6000
    # ... and even a stated limit learnt from a spent window leaves the key's 60 in force.
    tightening = rules.tightening(spent(6000, 0, 0.1), provider.name, grant.claims, ago=0.0)
    a.settle(grant, used=None, now=T, tightening=tightening)
    assert [draw(a, key, provider).wait for _ in range(2)] == [near(2.0 + M), near(3.0 + M)]


COLD = Claim("provider:OPENAI_API_KEY/gpt-4o", Limits(), 10, stated=True)


def _one_first_call_then_the_providers_pace(a: Allowance, *claims: Claim) -> None:
    first = draw(a, *claims)
    assert first.granted and first.wait == near(0.0)
    others = [draw(a, *claims) for _ in range(3)]  # cold: none goes before it settles
    assert [g.first_call_out for g in others] == [True] * 3
    assert all(0 < g.wait <= rules.SLOT_POLL_S for g in others)
    assert (others[0].allowance, others[0].bound) == (claims[-1].name, Bound.FIRST_CALL)
    assert others[0].blocking == f"{claims[-1].name} first call"  # as the table shows it
    seen = spent(300, 4, 1.0)  # a bucket of 5 a second: the first call took one
    tightening = rules.tightening(seen, claims[-1].name, first.claims, ago=0.0)
    a.settle(first, used=None, now=T, tightening=tightening, answered=True)
    waits = [draw(a, *claims).wait for _ in range(6)]
    assert waits[:3] == [near(0.0)] * 3  # of the four the provider had left, three at once
    # then one a fifth of a second (300 a minute), booked from the margin on
    assert waits[3:] == [near(M + 0.2 * k + 0.2 - rules.BURST_S) for k in (3, 4, 5)]


def a_cold_fleet_sends_one_first_call_then_paces_by_the_providers_figures(a: Allowance) -> None:
    _one_first_call_then_the_providers_pace(a, COLD)


def a_limit_set_too_high_starts_slow_too(a: Allowance) -> None:
    too_high = Claim("key:OPENAI_API_KEY", Limits(rpm=600), 10)  # twice the provider's 300
    _one_first_call_then_the_providers_pace(a, too_high, COLD)


def a_failed_first_call_lets_the_next_call_go_first(a: Allowance) -> None:
    first = draw(a, COLD)
    assert draw(a, COLD).first_call_out
    a.settle(first, used=None, now=T, answered=False)  # failed, no figures
    second = draw(a, COLD)
    assert second.granted and draw(a, COLD).first_call_out


def a_first_call_answered_without_figures_leaves_the_allowance_unheld(a: Allowance) -> None:
    first = draw(a, COLD)
    a.settle(first, used=None, now=T, answered=True)  # a provider that states none
    assert [draw(a, COLD).granted for _ in range(4)] == [True] * 4


def a_first_call_that_never_settles_expires(a: Allowance) -> None:
    hung = a.draw([COLD], now=T, most_wait=30.0, hold=0.2)  # its call's own timeout
    assert hung.granted and a.draw([COLD], now=T, most_wait=30.0, hold=0.2).first_call_out
    time.sleep(0.3)  # Redis keeps the server's clock: let it pass the first call's expiry
    assert a.draw([COLD], now=T + 0.3, most_wait=30.0, hold=0.2).granted


LIMIT_CASES: list[Callable[[Allowance], None]] = [
    a_cold_fleet_sends_one_first_call_then_paces_by_the_providers_figures,
    a_limit_set_too_high_starts_slow_too,
    a_failed_first_call_lets_the_next_call_go_first,
    a_first_call_answered_without_figures_leaves_the_allowance_unheld,
    a_first_call_that_never_settles_expires,
    a_rate_a_minute_is_spaced_to_one_second_bursts,
    a_burst_of_one_seconds_worth_less_the_margin_goes_at_once,
    a_burst_past_the_providers_bucket_meets_no_429,
    a_draw_past_the_most_it_may_wait_is_refused_and_takes_nothing,
    tokens_are_reserved_and_given_back_when_settled,
    a_call_larger_than_the_burst_waits_for_an_empty_bucket,
    calls_at_once_are_slots_released_when_settled,
    two_deployments_on_one_key_share_the_keys_limit,
    a_draw_takes_its_place_in_every_allowance_or_in_none,
    the_retry_budget_is_a_share_of_recent_first_calls,
    usage_shows_what_is_booked_and_in_flight,
    the_providers_numbers_limit_a_key_with_no_limits_set,
    what_another_application_used_books_the_bucket_ahead,
    a_limit_the_provider_did_not_state_is_read_against_the_configured_one,
    the_providers_numbers_never_loosen_a_configured_limit,
]
