"""What each class of failure on `primary` cools, for the three ways deployments hold keys:
the table the in-process, cross-process and Redis tests all check.

A failure that is the key's cools the pair (primary, that key) and primary's next key is
tried at once; one that is the provider's cools primary; a refusal ends the question and
cools nothing. In no case is `fallback` cooled: it did not fail, whatever key it shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gateway.config import Config, Deployment, Policy
from gateway.engine.credentials import key_name
from gateway.model import ErrorKind, Failure, ProviderKind
from gateway.record import replace
from tests.support.fakes import failure


class Scope(StrEnum):
    PAIR = "pair"  # (primary, key): each of primary's keys in turn
    DEPLOYMENT = "deployment"  # primary itself
    NOTHING = "nothing"  # the question ends there (a refusal is an answer of sorts)


@dataclass(frozen=True)
class Case:
    name: str
    failure: Failure  # what the fake primary fails with, every call
    spec: str | None  # the same as `support-ask simulate --fail primary=SPEC`
    calls: int  # calls per key before moving on (3: retried twice)
    scope: Scope
    seconds: float | None  # how long it cools


CASES = (
    Case("rate_limit", failure(ErrorKind.RATE_LIMIT), "429", 3, Scope.PAIR, 60),
    Case(
        "rate_limit_retry_after",
        failure(ErrorKind.RATE_LIMIT, retry_after=600),
        "429@600s",
        1,
        Scope.PAIR,
        600,
    ),
    Case("auth", failure(ErrorKind.AUTH), "401", 1, Scope.PAIR, 60),
    Case(
        "quota", failure(ErrorKind.QUOTA, code="insufficient_quota"), "quota", 1, Scope.PAIR, 3600
    ),
    Case(
        "billing",
        replace(failure(ErrorKind.QUOTA, code="billing_error"), status=400),
        None,
        1,
        Scope.PAIR,
        3600,
    ),
    Case("server_5xx", failure(ErrorKind.SERVER), "500", 3, Scope.DEPLOYMENT, 60),
    Case("timeout", failure(ErrorKind.TIMEOUT), None, 3, Scope.DEPLOYMENT, 60),
    Case("overloaded", failure(ErrorKind.OVERLOADED), "529", 3, Scope.DEPLOYMENT, 60),
    Case("model_not_found", failure(ErrorKind.MODEL_NOT_FOUND), "404", 1, Scope.DEPLOYMENT, 60),
    Case("refusal", failure(ErrorKind.REFUSAL), "refusal", 1, Scope.NOTHING, None),
)


@dataclass(frozen=True)
class Layout:
    name: str
    primary_keys: tuple[str, ...]
    fallback_key: str
    fallback_provider: ProviderKind

    def config(self, policy: Policy | None = None) -> Config:
        policy = policy or Policy()
        primary = Deployment(
            "primary",
            ProviderKind.OPENAI,
            128_000,
            policy,
            "gpt-4o",
            self.primary_keys[0],
            api_key_envs=self.primary_keys if len(self.primary_keys) > 1 else (),
        )
        fallback = Deployment(
            "fallback",
            self.fallback_provider,
            128_000,
            policy,
            "gpt-4o-mini" if self.fallback_provider is ProviderKind.OPENAI else "claude-haiku-4-5",
            self.fallback_key,
        )
        return Config(product="Acme", deployments=(primary, fallback))

    def yaml(self, base: str = "") -> str:
        """The same layout as a config file (`base`: a base_url for each deployment)."""
        keys = self.primary_keys[0] if len(self.primary_keys) == 1 else list(self.primary_keys)
        url = f"\n    base_url: {base}/v1" if base else ""
        provider = str(self.fallback_provider)
        model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
        fallback_url = f"\n    base_url: {base}{'/v1' if provider == 'openai' else ''}"
        return f"""\
product: Acme Cloud
deployments:
  - name: primary
    provider: openai
    model: gpt-4o
    api_key_env: {keys}{url}
    context_window: 128000
  - name: fallback
    provider: {provider}
    model: {model}
    api_key_env: {self.fallback_key}{fallback_url if base else ""}
    context_window: 128000
long_context: null
"""

    @property
    def environ(self) -> dict[str, str]:
        names = {*self.primary_keys, self.fallback_key}
        return {name: f"sk-test-{name.lower().replace('_', '-')}-0123456789" for name in names}


LAYOUTS = (
    # The common one: a large model and a cheaper one of the same provider, one account.
    Layout("one_key_two_deployments", ("OPENAI_API_KEY",), "OPENAI_API_KEY", ProviderKind.OPENAI),
    Layout(
        "two_keys_two_deployments",
        ("OPENAI_API_KEY",),
        "ANTHROPIC_API_KEY",
        ProviderKind.ANTHROPIC,
    ),
    Layout(
        "two_keys_one_deployment", ("KEY_A", "KEY_B"), "ANTHROPIC_API_KEY", ProviderKind.ANTHROPIC
    ),
)


def expected_calls(case: Case, layout: Layout) -> list[tuple[str, str, int]]:
    """(deployment, key variable, calls) in the order the first question makes them."""
    keys = layout.primary_keys if case.scope is Scope.PAIR else layout.primary_keys[:1]
    calls = [("primary", key, case.calls) for key in keys]
    if case.scope is not Scope.NOTHING:
        calls.append(("fallback", layout.fallback_key, 1))
    return calls


def expected_cooled(case: Case, layout: Layout) -> set[str]:
    """The records the first question leaves: what failed, and nothing else."""
    if case.scope is Scope.PAIR:
        return {key_name("primary", key) for key in layout.primary_keys}
    if case.scope is Scope.DEPLOYMENT:
        return {"primary"}
    return set()


def grouped(attempts: list[tuple[str, str | None]]) -> list[tuple[str, str | None, int]]:
    """Consecutive calls to the same deployment with the same key, counted."""
    out: list[tuple[str, str | None, int]] = []
    for deployment, key in attempts:
        if out and out[-1][:2] == (deployment, key):
            out[-1] = (deployment, key, out[-1][2] + 1)
        else:
            out.append((deployment, key, 1))
    return out
