"""Small pieces several commands share: the --config/--state options, their help's first
paragraphs, and human durations and times."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.config import Config, Deployment
    from gateway.seams import StateStore

CONFIG_HELP = (
    "The config file (else $SUPPORT_ASK_CONFIG, ./support-ask.yaml, the user config dir, "
    "the bundled default)."
)
STATE_HELP = (
    "The cooldown state: a file or a redis:// URL (else $SUPPORT_ASK_STATE, the config's "
    "state.url or state.path, the user state dir)."
)


# A lazy command's name -> the first paragraph of its help, which the root help lists it by
# without building it (cli.shell.listing).
SUMMARIES = {
    "simulate": "Run the real engine against simulated providers that fail as you say.",
    "cooldowns": "List the deployments cooling down (shared by every invocation); reset them.",
    "config": "Write or check the configuration.",
    "stats": "Show who served and how often a fallback did.",
    "eval": "Check every deployment against the prompt's rules.",
    "batch": "Answer a file of questions concurrently, one JSON line per question.",
    "index": "Build or refresh the index of a help centre (DIR), ahead of the first question.",
}


def help_of(name: str, details: str = "") -> str:
    """A lazy command's help=: its summary, then `details`, the paragraphs after it
    (Typer dedents a help= as it does a docstring)."""
    return f"{SUMMARIES[name]}\n\n{details}" if details else SUMMARIES[name]


def can_call(deployment: Deployment, environ: Mapping[str, str]) -> bool:
    """Whether the deployment can be called as things stand: offline, keyless, or one of
    its keys set to a value that can be a key."""
    from gateway.engine.credentials import keys_for

    return keys_for(deployment, environ).problem is None


def seconds_until_callable(
    store: StateStore, config: Config, environ: Mapping[str, str], now: float
) -> float | None:
    """How long until a deployment that can be called stops cooling down: 0 when one is not
    cooling now, None when none can be called at all (waiting will not help)."""
    from gateway.engine.credentials import current, key_name, variables

    callable_ = [d for d in config.all_deployments() if can_call(d, environ)]
    if not callable_:
        return None
    active = store.active(now, current(config, environ))

    def left(name: str) -> float:
        return max(0.0, active[name].until - now) if name in active else 0.0

    def wait(d: Deployment) -> float:
        # Back when the deployment is, and one of its keys (if any) is too.
        keys = [left(key_name(d.name, v)) for v in variables(d)]
        return max(left(d.name), min(keys, default=0.0))

    return min(wait(d) for d in callable_)


def local_time(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def path_text(path: Path) -> str:
    return str(path)
