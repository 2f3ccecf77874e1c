"""Small pieces several commands share: the --config/--state options, and human durations
and times."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

CONFIG_HELP = (
    "The config file (else $SUPPORT_ASK_CONFIG, ./support-ask.yaml, the user config dir, "
    "the bundled default)."
)
STATE_HELP = (
    "The cooldown state file (else $SUPPORT_ASK_STATE, the config's state.path, "
    "the user state dir)."
)


def duration(seconds: float) -> str:
    """42s, 3m12s, 1h05m: a countdown a person reads at a glance."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def local_time(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def path_text(path: Path) -> str:
    return str(path)
