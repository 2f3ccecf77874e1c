"""Which keys a deployment calls with, in which order, and what their records are named.

A deployment may name several key variables (`api_key_env: [A, B]`). Each key is its own
credential: a failure that belongs to the key (a bad key, an exhausted quota or billing,
a rate limit on that key: `key_scoped` in `gateway.engine.table`) cools the key, and the
deployment's next key is tried at once; a failure that belongs to the provider (5xx,
overloaded, a timeout, the network) cools the deployment. A key's failure cools the pair
(deployment, key), never the variable for every deployment naming it: providers count
rate limits per model (and per deployment on Azure), and even a 401 or an exhausted quota
seen at one endpoint is only a guess about another, one that would cost the customer the
answer while checking costs one fast call.

A key is named by its environment variable, never by its value: `key:primary/OPENAI_API_KEY`
in the state, `OPENAI_API_KEY` in the attempts. A record bound to a key also keeps its
salted fingerprint, so a key that changed is a new chance. This module is the one place
that builds and reads those names; the stores know a name and a key binding, no more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gateway.config import Config, Deployment, KeyStrategy
from gateway.secrets.key import KeyValueError, Secret, read_key

KEY_PREFIX = "key:"
# Deployment names are letters, digits, '-', '_' and '.', variables never hold '/': the
# pair's name splits back unambiguously.
_PAIR = "/"
# (Key and Keys are NamedTuples, not dataclasses: every question imports this module.)


class Key(NamedTuple):
    """One usable key of one deployment: its variable's name and its value."""

    variable: str
    secret: Secret
    deployment: str
    record: str  # this pair's record (this deployment, this key) in the shared state

    @classmethod
    def of(cls, variable: str, secret: Secret, deployment: str) -> Key:
        return cls(variable, secret, deployment, key_name(deployment, variable))


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


def key_name(deployment: str, variable: str) -> str:
    """The state record's name for `deployment`'s key held in `variable`."""
    return f"{KEY_PREFIX}{deployment}{_PAIR}{variable}"


def key_variable(name: str) -> str | None:
    """The key variable a record's name is for; None for a deployment's own record."""
    if not name.startswith(KEY_PREFIX):
        return None
    return name[len(KEY_PREFIX) :].rpartition(_PAIR)[2]


def obsolete(name: str) -> bool:
    """Whether `name` is a key-wide record of an earlier release (`key:VARIABLE`, for every
    deployment naming it). Never honoured: it would keep a fallback on the same key shut
    for up to an hour after the upgrade, and dropping one costs at most one call."""
    return name.startswith(KEY_PREFIX) and _PAIR not in name


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
            usable.append(Key.of(variable, secret, deployment.name))
    return Keys(tuple(usable), tuple(unusable), needed=bool(names))


class KeySet(NamedTuple):
    """Every deployment's keys as the environment held them at one moment, and the key in
    force under each record name (what reading the state needs)."""

    values: tuple[str | None, ...]  # each key variable's value, as read
    by_deployment: Mapping[str, tuple[Deployment, Keys]]
    current: Mapping[str, Secret | None]
    environ: Mapping[str, str]

    def keys_for(self, deployment: Deployment) -> Keys:
        found = self.by_deployment.get(deployment.name)
        if found is not None and found[0] is deployment:
            return found[1]
        return keys_for(deployment, self.environ)  # not one of the config's: read afresh


class KeyRing:
    """Each deployment's keys, read from `environ` and checked again only when one of the
    config's key variables changes (a key rotated under a long-lived engine): a question
    reads them once (`now`), and comparing the values is cheaper than checking them."""

    def __init__(self, config: Config, environ: Mapping[str, str]) -> None:
        self._config = config
        self._environ = environ
        deployments = config.all_deployments()
        self._variables = tuple(dict.fromkeys(v for d in deployments for v in variables(d)))
        self._names = record_names(config)
        self._seen: KeySet | None = None

    def now(self) -> KeySet:
        """The keys as the environment holds them now."""
        values = tuple(map(self._environ.get, self._variables))
        seen = self._seen
        if seen is not None and seen.values == values:
            return seen
        by_deployment = {
            d.name: (d, keys_for(d, self._environ)) for d in self._config.all_deployments()
        }
        current: dict[str, Secret | None] = dict.fromkeys(self._names)
        for _, keys in by_deployment.values():
            for key in keys.usable:
                current[key.record] = key.secret
        # One assignment: a question on another thread sees the old set or the new one.
        self._seen = seen = KeySet(values, by_deployment, current, self._environ)
        return seen

    def keys_for(self, deployment: Deployment) -> Keys:
        return self.now().keys_for(deployment)

    def current(self) -> Mapping[str, Secret | None]:
        """The key in force under each record name (`current`)."""
        return self.now().current


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
    """Every name the state may hold a record under for `config`: deployments and their
    (deployment, key) pairs. A record of any other name is pruned when the state is next
    written: an earlier release's key-wide records among them."""
    names = {d.name for d in config.all_deployments()}
    names.update(key_name(d.name, v) for d in config.all_deployments() for v in variables(d))
    return frozenset(names)


def current(config: Config, environ: Mapping[str, str]) -> Mapping[str, Secret | None]:
    """The key in force under each record name, for reading the state: records bound to a
    key that changed (or is gone) are void. Deployments' own records are bound to none."""
    return KeyRing(config, environ).current()
