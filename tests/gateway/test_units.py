"""Durations in messages read to a tenth of a second."""

from __future__ import annotations

import pytest

from gateway.units import seconds


@pytest.mark.parametrize(
    ("value", "shown"),
    [(6.83375, "6.8"), (20.0, "20"), (0.4, "0.4"), (0.05, "0.05"), (0.0, "0"), (119.96, "120")],
)
def test_seconds_are_rounded_for_people(value: float, shown: str) -> None:
    assert seconds(value) == shown
