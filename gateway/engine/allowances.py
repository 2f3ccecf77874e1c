"""Which of the fleet's shared allowances a call draws from: its deployment's `limits`, its
key's (`keys: {VARIABLE: {limits}}`, shared by every deployment naming the variable), and
the provider's own numbers for its key and model (`provider:VARIABLE/MODEL`, limited only
by what the provider's headers stated: providers limit a key per model); and the name of a
deployment's retry budget."""

from __future__ import annotations

from gateway.config import Config, Deployment, Limits
from gateway.engine.credentials import Key
from gateway.limits.records import Claim

_STATED_ONLY = Limits()
_KEY = "key:"


def of_deployment(d: Deployment) -> str:
    """The allowance of `d`'s own `limits`."""
    return f"deployment:{d.name}"


def of_key(variable: str) -> str:
    """The allowance of the key in `variable` (`keys: {VARIABLE: {limits}}`), shared by every
    deployment naming it."""
    return f"{_KEY}{variable}"


def is_key(name: str) -> bool:
    """Whether the allowance `name` is a key's: refused by it, a deployment with another key
    may still go."""
    return name.startswith(_KEY)


def provider(d: Deployment, variable: str) -> str:
    """The allowance the provider's headers speak for: `d`'s model with the key in
    `variable`."""
    return f"provider:{variable}/{d.model or d.name}"


def claims(config: Config, d: Deployment, key: Key | None, tokens: int) -> tuple[Claim, ...]:
    """The allowances a call of `tokens` tokens to `d` with `key` takes its place in."""
    out: list[Claim] = []
    if d.limits is not None:
        out.append(Claim(of_deployment(d), d.limits, tokens))
    if key is not None:
        out += [
            Claim(of_key(var), lim, tokens) for var, lim in config.key_limits if var == key.variable
        ]
        # The provider counts every process on the key: with the shared store out of
        # reach, each keeps to its share of what it stated, the call's largest fleet.
        fleet = max((c.limits.fleet_size for c in out), default=1)
        # A provider that states its figures starts slow until it has (`limits.rules`).
        name, states = provider(d, key.variable), d.provider.states_limits
        out.append(Claim(name, Limits(fleet_size=fleet), tokens, states))
    return tuple(out)


def stated(config: Config) -> list[Claim]:
    """Every allowance the providers' headers may tighten, once each (for listings)."""
    names = {
        provider(d, variable): None
        for d in config.all_deployments()
        if not d.provider.offline
        for variable in d.key_variables
    }
    return [Claim(name, _STATED_ONLY, 0) for name in names]


def at_once(config: Config, d: Deployment) -> int | None:
    """The calls at once `d`'s allowances allow with its first key (its own `limits` and
    that key's); None: neither sets any."""
    first = d.key_variables[:1]
    found = [lim.concurrent for var, lim in config.key_limits if var in first]
    if d.limits is not None:
        found.append(d.limits.concurrent)
    return min((n for n in found if n is not None), default=None)


def retry_budget(d: Deployment) -> str:
    """The name of `d`'s retry budget: its first calls and retries across the fleet."""
    return f"retries:{d.name}"
