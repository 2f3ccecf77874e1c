"""What a simulation runs with: each deployment pointed at its fake server, and an
environment in which every key variable holds a dummy key.

Every simulated deployment gets a dummy key, so none is skipped for a missing key and no
real key is ever handed to anything (nothing leaves the process either way).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.config import Config
from gateway.record import replace
from gateway.simulate.addresses import simulated_deployment

DUMMY_KEY = "simulated-key-not-a-secret"


def simulated_config(config: Config) -> Config:
    long_context = config.long_context
    return replace(
        config,
        deployments=tuple(simulated_deployment(d) for d in config.deployments),
        long_context=None if long_context is None else simulated_deployment(long_context),
    )


def simulated_environ(config: Config, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without a real key, a dummy one in each key variable (every one of a
    deployment's keys, so rotation to its next key is simulated too)."""
    names = {v for d in config.all_deployments() for v in (d.api_key_env, *d.key_variables) if v}
    env = {k: v for k, v in environ.items() if k not in names}
    env.update(dict.fromkeys(names, DUMMY_KEY))
    return env
