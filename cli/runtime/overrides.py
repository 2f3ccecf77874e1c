"""What `ask`'s command line changes in the config for one question: `-d NAME` (only
these deployments), `--budget` and `--timeout` (for every deployment, overrides included:
the command line is the most specific word)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.record import replace

if TYPE_CHECKING:
    from gateway.config import Config, Deployment, Policy


def apply(
    config: Config,
    *,
    deployments: Sequence[str] = (),
    budget: float | None = None,
    timeout: float | None = None,
) -> Config:
    if deployments:
        config = only(config, deployments)
    for flag, value in (("--budget", budget), ("--timeout", timeout)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise CliError(
                f"{flag} {value:g} is not a number of seconds above 0",
                ExitCode.USAGE,
                fix=f"give seconds, e.g. {flag} 10",
            )
    if budget is None and timeout is None:
        return config

    def limited(d: Deployment) -> Deployment:
        return replace(d, policy=_limited(d.policy, budget, timeout))

    return replace(
        config,
        policy=_limited(config.policy, budget, timeout),
        deployments=tuple(limited(d) for d in config.deployments),
        long_context=None if config.long_context is None else limited(config.long_context),
    )


def _limited(policy: Policy, budget: float | None, timeout: float | None) -> Policy:
    return replace(
        policy,
        budget=policy.budget if budget is None else budget,
        timeout=policy.timeout if timeout is None else timeout,
    )


def only(config: Config, names: Sequence[str]) -> Config:
    """The config with only the named deployments, in the config's order (the order of
    fallback is the config's, whatever the order of the flags). The long-context deployment
    stays only if named; named alone, it is the one deployment."""
    every = config.all_deployments()
    known = [d.name for d in every]
    for name in names:
        if name not in known:
            from difflib import get_close_matches

            close = get_close_matches(name, known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CliError(
                f"-d {name}: no deployment named '{name}' in {config.source}{hint}",
                ExitCode.USAGE,
                fix=f"name one of: {', '.join(known)}",
            )
    chosen = tuple(d for d in config.deployments if d.name in names)
    long_context = config.long_context
    if long_context is not None and long_context.name not in names:
        long_context = None
    if not chosen and long_context is not None:
        chosen, long_context = (long_context,), None
    return replace(config, deployments=chosen, long_context=long_context)
