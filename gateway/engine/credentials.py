"""Which keys a deployment calls with, in which order, and which failures are a key's.

A deployment may name several key variables (`api_key_env: [A, B]`). Each key is its own
credential: a failure that belongs to the key (a bad key, an exhausted quota or billing,
a rate limit on that key) cools the key, and the deployment's next key is tried at once;
a failure that belongs to the provider (5xx, overloaded, a timeout, the network) cools
the deployment. A key is named by its environment variable (`key:OPENAI_API_KEY` in the
state, `OPENAI_API_KEY` in the attempts), never by its value; a record bound to a key also
keeps its salted fingerprint, so a key that changed is a new chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gateway.config import Config, Deployment, KeyStrategy
from gateway.model import KEY_PREFIX, ErrorKind
from gateway.secret import KeyValueError, Secret, read_key

# The failures that are the key's, not the provider's: another key may well work now.
KEY_SCOPED = frozenset({ErrorKind.AUTH, ErrorKind.QUOTA, ErrorKind.RATE_LIMIT})
# (Key and Keys are NamedTuples, not dataclasses: every question imports this module.)


class Key(NamedTuple):
    """One usable key: its variable's name and its value."""

    variable: str
    secret: Secret

    @property
    def record(self) -> str:
        """The name of this key's record in the shared state."""
        return key_name(self.variable)


class Keys(NamedTuple):
    """A deployment's usable keys in config order, and why the others cannot be used."""

    usable: tuple[Key, ...]
    unusable: tuple[str, ...] = ()  # "OPENAI_API_KEY not set", "... holds a space"
    needed: bool = True  # False: offline, or a server of one's own that takes no key

    @property
    def problem(self) -> str | None:
        """Why the deployment cannot be called at all (a key is needed, none is usable)."""
        if not self.needed or self.usable:
            return None
        return "; ".join(self.unusable)


def key_name(variable: str) -> str:
    """The state record's name for the key held in `variable`."""
    return KEY_PREFIX + variable


def key_scoped(kind: ErrorKind) -> bool:
    """Whether a failure of this kind is the key's (cool the key, try the next one)."""
    return kind in KEY_SCOPED


def variables(deployment: Deployment) -> tuple[str, ...]:
    """The deployment's key variables, in the order they are tried."""
    return deployment.key_variables


def keys_for(deployment: Deployment, environ: Mapping[str, str]) -> Keys:
    """The keys set (and well-formed) in `environ`. A value that cannot be a key is never
    sent (so never echoed, never cooled); with no usable key the deployment is skipped."""
    names = variables(deployment)
    usable: list[Key] = []
    unusable: list[str] = []
    for variable in names:
        try:
            secret = read_key(environ, variable)
        except KeyValueError as exc:
            unusable.append(str(exc))
            continue
        if secret is None:
            unusable.append(f"{variable} not set")
        else:
            usable.append(Key(variable, secret))
    return Keys(tuple(usable), tuple(unusable), needed=bool(names))


def rotates(deployment: Deployment) -> bool:
    """Whether the deployment keeps a round-robin cursor in the state."""
    return deployment.key_strategy is KeyStrategy.ROUND_ROBIN and len(variables(deployment)) > 1


def in_turn(keys: Sequence[Key], deployment: Deployment, cursor: int) -> list[Key]:
    """`keys` in the order this question tries them: as configured, or (round robin)
    starting at the cursor's key, so questions spread over every key."""
    if not keys or not rotates(deployment):
        return list(keys)
    start = cursor % len(keys)
    return [*keys[start:], *keys[:start]]


def record_names(config: Config) -> frozenset[str]:
    """Every name the state may hold a record under for `config`: deployments and keys."""
    names = {d.name for d in config.all_deployments()}
    names.update(key_name(v) for d in config.all_deployments() for v in variables(d))
    return frozenset(names)


def current(config: Config, environ: Mapping[str, str]) -> dict[str, Secret | None]:
    """The key in force under each record name, for reading the state: records bound to a
    key that changed (or is gone) are void. Deployments' own records are bound to none."""
    out: dict[str, Secret | None] = {d.name: None for d in config.all_deployments()}
    for d in config.all_deployments():
        for key in keys_for(d, environ).usable:
            out[key.record] = key.secret
    for name in record_names(config):
        out.setdefault(name, None)
    return out
