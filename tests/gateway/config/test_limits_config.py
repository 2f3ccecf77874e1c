"""The shared allowances as users write them: a deployment's `limits`, each key's under
`keys:` (two deployments on one key, several keys), `policy.retry_budget`; and every
mistake named with its line and the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gateway.config import ConfigError, Limits, load_config

TWO_ON_ONE_KEY = """
product: Acme
policy: {retry_budget: 0.05}
keys:
  OPENAI_KEY_A: {limits: {rpm: 500, tpm: 200000}}
  OPENAI_KEY_B: {limits: {rpm: 60, fleet_size: 3}}
deployments:
  - name: fast
    provider: openai
    model: gpt-4o-mini
    api_key_env: [OPENAI_KEY_A, OPENAI_KEY_B]
    context_window: 128000
    limits: {concurrent: 8}
  - name: smart
    provider: openai
    model: gpt-4o
    api_key_env: OPENAI_KEY_A
    context_window: 128000
    policy: {retry_budget: 0.2}
  - name: local
    provider: local
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "support-ask.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_key_may_give_only_its_fleet_size_a_share_of_what_the_provider_states(
    tmp_path: Path,
) -> None:
    text = TWO_ON_ONE_KEY.replace("{rpm: 60, fleet_size: 3}", "{fleet_size: 3}")
    config = load_config(write(tmp_path, text))
    assert dict(config.key_limits)["OPENAI_KEY_B"] == Limits(fleet_size=3)


def test_deployments_and_keys_set_their_limits(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, TWO_ON_ONE_KEY))
    fast, smart, local = config.deployments
    assert fast.limits == Limits(concurrent=8)
    assert smart.limits is None and local.limits is None
    assert dict(config.key_limits) == {
        "OPENAI_KEY_A": Limits(rpm=500, tpm=200000),
        "OPENAI_KEY_B": Limits(rpm=60, fleet_size=3),
    }
    assert (config.policy.retry_budget, fast.policy.retry_budget) == (0.05, 0.05)
    assert smart.policy.retry_budget == 0.2
    again = load_config(write(tmp_path, TWO_ON_ONE_KEY))  # through the cache
    assert again.key_limits == config.key_limits and again.deployments[0].limits == fast.limits


def test_the_retry_budget_defaults_to_a_tenth(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "product: A\ndeployments: [{name: l, provider: local}]\n"))
    assert config.policy.retry_budget == 0.1 and config.key_limits == ()


@pytest.mark.parametrize(
    ("yaml_text", "key", "words"),
    [
        (
            "deployments: [{name: l, provider: local, limits: {rpm: 0}}]",
            "deployments[0].limits.rpm",
            "at least 1",
        ),
        (
            "deployments: [{name: l, provider: local, limits: {rpm: '60'}}]",
            "deployments[0].limits.rpm",
            "remove the quotes",
        ),
        (
            "deployments: [{name: l, provider: local, limits: {rps: 1}}]",
            "deployments[0].limits.rps",
            "did you mean 'rpm'",
        ),
        (
            "deployments: [{name: l, provider: local, limits: {}}]",
            "deployments[0].limits",
            "give rpm, tpm, concurrent or fleet_size",
        ),
        (
            "deployments: [{name: l, provider: local, limits: 60}]",
            "deployments[0].limits",
            "expected a mapping",
        ),
        (
            "keys: {NOT_USED: {limits: {rpm: 5}}}\ndeployments: [{name: l, provider: local}]",
            "keys.NOT_USED",
            "no deployment names NOT_USED",
        ),
        (
            "keys: {K: {limit: {rpm: 5}}}\ndeployments: [{name: l, provider: local}]",
            "keys.K.limit",
            "did you mean 'limits'",
        ),
        (
            "policy: {retry_budget: 11}\ndeployments: [{name: l, provider: local}]",
            "policy.retry_budget",
            "from 0 to 10",
        ),
    ],
)
def test_mistakes_name_the_key_and_the_fix(
    tmp_path: Path, yaml_text: str, key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "product: A\n" + yaml_text + "\n"))
    assert any(p.key == key and words in p.message for p in caught.value.problems), [
        str(p) for p in caught.value.problems
    ]
