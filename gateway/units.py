"""How a duration reads, wherever a person reads one. Each form is for one kind of place:

- `seconds`: the number in a message or a detail (`retry after 0.6 s`, `timed out after
  6.8 s`): a tenth of a second, a hundredth below 0.1 s so a short wait is not shown as 0,
  never `6.83375`. The caller writes the unit.
- `tenths`: a cell of the live attempts table (`2.0s`): always one decimal, so a counting-down
  wait keeps its width as it ticks.
- `elapsed`: a latency in a report (`450ms`, `1.2s`), where most calls take under a second.
- `countdown`: what is left of a cooldown or a batch (`42s`, `3m12s`, `1h05m`), read at a
  glance.
- `window` and `parse_window`: a span as a user writes it on the command line (`90m`, `24h`,
  `7d`), each the other's inverse.

The fault grammar of `simulate` and the HTTP `Retry-After` value of the simulators are wire
formats, not readings for a person, and stay with the code that speaks them.
"""

from __future__ import annotations

import re


def seconds(value: float) -> str:
    """The number only; the caller writes the unit (`f"{seconds(t)} s"`)."""
    text = f"{value:.1f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2f}"
    return text[:-2] if text.endswith(".0") else text


def tenths(value: float) -> str:
    """`2.0s`; nothing for no time at all (an attempt that did not wait)."""
    return f"{value:.1f}s" if value > 0 else ""


def elapsed(value: float | None) -> str:
    """`450ms` below a second, `1.2s` from one on, `-` when nothing was measured."""
    if value is None:
        return "-"
    if value == 0:
        return "0s"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.1f}s"


def countdown(value: float) -> str:
    """42s, 3m12s, 1h05m."""
    s = max(0, round(value))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
# Compiled on first use (re keeps it): every answer imports this module for its stats line,
# and only `stats --since` parses a window.
_WINDOW = r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$"


def parse_window(text: str) -> float:
    """`90m`, `24h`, `7d` (also `s`, `w`) as seconds; ValueError says what is accepted."""
    match = re.match(_WINDOW, text, re.IGNORECASE)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(
            f"{text!r} is not a time window: use a number and a unit, like 90m, 24h or 7d"
        )
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def window(value: float) -> str:
    """The window as a user would write it: `90m`, `24h`, `7d` (days only from two on)."""
    for unit, size, smallest in (
        ("d", 86400.0, 172800.0),
        ("h", 3600.0, 3600.0),
        ("m", 60.0, 60.0),
    ):
        if value >= smallest and (value / size).is_integer():
            return f"{int(value / size)}{unit}"
    return f"{value:g}s"
