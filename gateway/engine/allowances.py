"""Which of the fleet's shared allowances a call draws from: its deployment's `limits`, and
its key's (`keys: {VARIABLE: {limits}}`, shared by every deployment naming the variable);
and the name of a deployment's retry budget."""

from __future__ import annotations

from gateway.config import Config, Deployment
from gateway.engine.credentials import Key
from gateway.limits.records import Claim


def claims(config: Config, d: Deployment, key: Key | None, tokens: int) -> tuple[Claim, ...]:
    """The allowances a call of `tokens` tokens to `d` with `key` takes its place in."""
    out: list[Claim] = []
    if d.limits is not None:
        out.append(Claim(f"deployment:{d.name}", d.limits, tokens))
    if key is not None:
        out += [
            Claim(f"key:{var}", lim, tokens)
            for var, lim in config.key_limits
            if var == key.variable
        ]
    return tuple(out)


def retry_budget(d: Deployment) -> str:
    """The name of `d`'s retry budget: its first calls and retries across the fleet."""
    return f"retries:{d.name}"
