"""The engine and the shared state: several keys per deployment, the one probe after a
cooldown, and how long each kind of failure cools down (scripted providers, virtual time)."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.config import Config, Deployment, KeyStrategy, Policy
from gateway.model import CooldownBasis, ErrorKind, Outcome, ProviderKind
from gateway.state.file import FileStore
from tests.gateway.engine.test_engine import Harness
from tests.support.fakes import answer, failure

KEYS = {"KEY_A": "sk-test-aaaaaaaaaaaaaaaa", "KEY_B": "sk-test-bbbbbbbbbbbbbbbb"}


def fleet_config(strategy: KeyStrategy = KeyStrategy.IN_ORDER) -> Config:
    policy = Policy()
    primary = Deployment(
        "primary",
        ProviderKind.OPENAI,
        128_000,
        policy,
        "gpt-4o-mini",
        api_key_env="KEY_A",
        api_key_envs=("KEY_A", "KEY_B"),
        key_strategy=strategy,
    )
    fallback = Deployment(
        "fallback", ProviderKind.ANTHROPIC, 200_000, policy, "claude-haiku-4-5", "FALLBACK_KEY"
    )
    return Config(product="Acme", deployments=(primary, fallback))


def harness(scripts: dict[str, list[object]], **kw: object) -> Harness:
    environ = {**KEYS, "FALLBACK_KEY": "sk-ant-test-fallback"}
    return Harness(scripts, config=kw.pop("config", fleet_config()), environ=environ, **kw)  # type: ignore[arg-type]


def test_a_keys_own_failure_cools_that_key_and_the_next_key_is_tried_at_once() -> None:
    h = harness({"primary": [failure(ErrorKind.AUTH), answer("from key B")], "fallback": []})
    result = h.ask()
    assert result.answer == "from key B" and result.deployment == "primary"
    assert [(a.deployment, a.key, str(a.outcome)) for a in result.attempts] == [
        ("primary", "KEY_A", "fail_over"),
        ("primary", "KEY_B", "answered"),
    ]
    assert "next: its key KEY_B" in result.attempts[0].detail
    assert [c.name for c in h.store.entries()] == ["key:primary/KEY_A"], "the pair, not primary"

    second = h.ask()
    assert [(a.key, str(a.outcome)) for a in second.attempts] == [("KEY_B", "answered")]
    assert [k.reveal() for k in h.providers["primary"].keys] == [KEYS["KEY_A"], KEYS["KEY_B"]]


def test_the_json_names_each_key_by_its_variable_never_its_value() -> None:
    h = harness({"primary": [failure(ErrorKind.QUOTA), answer("ok")], "fallback": []})
    text = json.dumps(h.ask().as_json())
    assert '"key": "KEY_A"' in text and '"key": "KEY_B"' in text
    assert not any(value in text for value in KEYS.values())


def test_a_providers_failure_cools_the_deployment_not_its_keys() -> None:
    h = harness({"primary": [failure(ErrorKind.SERVER)], "fallback": [answer("fallback")]})
    assert h.ask().deployment == "fallback"
    assert h.calls("primary") == 3, "retried on its key, then failed over: no key rotation"
    assert [c.name for c in h.store.entries()] == ["primary"]
    assert h.ask().attempts[0].outcome is Outcome.SKIPPED


def test_when_every_key_is_cooling_the_deployment_is_skipped_saying_so() -> None:
    h = harness({"primary": [failure(ErrorKind.QUOTA)], "fallback": [answer("fallback")]})
    assert h.ask().deployment == "fallback"
    assert sorted(c.name for c in h.store.entries()) == ["key:primary/KEY_A", "key:primary/KEY_B"]
    skipped = h.ask().attempts[0]
    assert skipped.outcome is Outcome.SKIPPED
    assert skipped.detail.startswith("every key is cooling down: KEY_A for 3600 s after quota")
    assert h.calls("primary") == 2


def test_a_rotated_key_value_is_a_new_chance() -> None:
    h = harness({"primary": [failure(ErrorKind.AUTH)], "fallback": [answer("fallback")]})
    h.ask()
    h.environ["KEY_A"] = "sk-test-rotated-cccccccc"
    h.providers["primary"].script[:] = [answer("the new key works")]
    result = h.ask()
    assert (result.answer, result.attempts[0].key) == ("the new key works", "KEY_A")
    assert [c.name for c in h.store.entries()] == ["key:primary/KEY_B"], "A's record cleared"


def test_round_robin_starts_each_question_at_the_next_key() -> None:
    h = harness(
        {"primary": [answer("ok")], "fallback": []},
        config=fleet_config(KeyStrategy.ROUND_ROBIN),
    )
    used = [h.ask().attempts[0].key for _ in range(4)]
    assert used == ["KEY_A", "KEY_B", "KEY_A", "KEY_B"]


def test_a_question_that_goes_well_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cooldowns.json"
    h = harness({"primary": [answer("ok")], "fallback": []}, store=FileStore(path))
    h.ask()
    assert not path.exists()


# -- how long -------------------------------------------------------------------------------


def only_cooldown(h: Harness) -> tuple[float, CooldownBasis]:
    (c,) = h.store.entries()
    return c.until - c.started, c.basis


def test_a_quota_failure_cools_for_quota_cooldown_unless_a_reset_is_named() -> None:
    single = Harness({"primary": [failure(ErrorKind.QUOTA)], "fallback": [answer("ok")]})
    single.ask()
    assert only_cooldown(single) == (3600, CooldownBasis.QUOTA)
    named = Harness(
        {"primary": [failure(ErrorKind.QUOTA, retry_after=900)], "fallback": [answer("ok")]}
    )
    named.ask()
    assert only_cooldown(named) == (900, CooldownBasis.PROVIDER)


def test_a_server_named_wait_of_a_week_is_capped_at_max_cooldown() -> None:
    h = Harness(
        {
            "primary": [failure(ErrorKind.OVERLOADED, retry_after=7 * 86400)],
            "fallback": [answer("ok")],
        }
    )
    h.ask()
    assert only_cooldown(h) == (3600, CooldownBasis.CAPPED)


def test_the_state_keeps_what_classifies_a_failure_never_its_text(tmp_path: Path) -> None:
    path = tmp_path / "cooldowns.json"
    echo = "529 overloaded_error: too busy for 'how do I close jane@example.com'"
    h = Harness(
        {
            "primary": [failure(ErrorKind.OVERLOADED, detail=echo, code="overloaded_error")],
            "fallback": [answer("ok")],
        },
        store=FileStore(path),  # type: ignore[arg-type]
    )
    assert h.ask().deployment == "fallback"
    raw = path.read_text()
    assert "jane" not in raw and "close" not in raw
    entry = json.loads(raw)["cooldowns"]["primary"]
    assert (entry["kind"], entry["status"], entry["code"]) == (
        "overloaded",
        529,
        "overloaded_error",
    )


# -- the one probe after a cooldown -----------------------------------------------------------


def cooled_primary() -> Harness:
    h = Harness({"primary": [failure(ErrorKind.SERVER)], "fallback": [answer("fallback")]})
    h.ask()
    h.clock.advance(61)  # the 60 s cooldown is over: the next call is the probe
    return h


def test_after_a_cooldown_one_probe_and_a_success_clears_it() -> None:
    h = cooled_primary()
    h.providers["primary"].script[:] = [answer("back")]
    result = h.ask()
    assert result.answer == "back"
    assert "the probe after its cooldown answered" in result.attempts[0].detail
    assert h.store.entries() == []


def test_a_failed_probe_cools_it_again_for_twice_as_long() -> None:
    h = cooled_primary()
    result = h.ask()
    assert result.deployment == "fallback"
    assert h.calls("primary") == 4, "the probe is one call: no retries"
    assert "the probe after its cooldown failed" in result.attempts[0].detail
    (c,) = h.store.entries()
    assert (c.until - c.started, c.trips, c.basis) == (120, 2, CooldownBasis.ESCALATED)


def test_while_one_invocation_probes_the_others_keep_skipping() -> None:
    h = cooled_primary()
    other = Harness({"primary": [answer("never")], "fallback": [answer("fallback")]}, store=h.store)
    other.clock.advance(h.clock.monotonic())
    assert h.store.lease("primary", now=h.clock.wall(), ttl=20), "someone else probes"
    result = other.ask()
    assert result.deployment == "fallback" and other.calls("primary") == 0
    assert "another invocation is sending the one probe" in result.attempts[0].detail
