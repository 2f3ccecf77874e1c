"""How a duration reads in a message: `6.8 s`, `20 s`, `0.05 s`, never `6.83375 s`.

A timeout is often what was left of a budget, a float with every digit the clock gave:
details, the attempts table and errors show it to a tenth of a second (a hundredth
below 0.1 s, so a short wait is not shown as 0).
"""

from __future__ import annotations


def seconds(value: float) -> str:
    """The number only; the caller writes the unit (`f"{seconds(t)} s"`)."""
    text = f"{value:.1f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2f}"
    return text[:-2] if text.endswith(".0") else text
