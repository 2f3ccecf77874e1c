"""Which key each deployment calls with, and how keys are named in the shared state.

A key is named by its environment variable (`key:OPENAI_API_KEY`), never by its value:
the state, the attempts table and the JSON can all say which key was used. A record bound
to a key also keeps the key's salted fingerprint, so a key that changed is a new chance.
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.config import Config, Deployment
from gateway.model import KEY_PREFIX
from gateway.secret import Secret


def key_name(variable: str) -> str:
    """The state record's name for the key held in `variable`."""
    return KEY_PREFIX + variable


def variables(deployment: Deployment) -> tuple[str, ...]:
    """The deployment's key variables, in the order they are tried."""
    if deployment.provider.offline or not deployment.api_key_env:
        return ()
    return (deployment.api_key_env,)


def record_names(config: Config) -> frozenset[str]:
    """Every name the state may hold a record under for `config`: deployments and keys."""
    names = {d.name for d in config.all_deployments()}
    names.update(key_name(v) for d in config.all_deployments() for v in variables(d))
    return frozenset(names)


def read_key(variable: str, environ: Mapping[str, str]) -> Secret | None:
    value = environ.get(variable, "").strip()
    return Secret(value) if value else None


def current(config: Config, environ: Mapping[str, str]) -> dict[str, Secret | None]:
    """The key in force for each record name: a deployment's (first) key under its name,
    and each key under its own, so records bound to a key that changed are void."""
    out: dict[str, Secret | None] = {}
    for d in config.all_deployments():
        keys = [(v, read_key(v, environ)) for v in variables(d)]
        out[d.name] = keys[0][1] if keys else None
        out.update((key_name(v), key) for v, key in keys)
    return out
