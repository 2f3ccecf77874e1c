"""Each reading of a duration, as a person sees it (gateway/units.py says where each is used)."""

from __future__ import annotations

import pytest

from gateway.units import countdown, elapsed, parse_window, seconds, tenths, window


@pytest.mark.parametrize(
    ("value", "shown"),
    [(6.83375, "6.8"), (20.0, "20"), (0.4, "0.4"), (0.05, "0.05"), (0.0, "0"), (119.96, "120")],
)
def test_seconds_are_rounded_for_people(value: float, shown: str) -> None:
    assert seconds(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"), [(2.0, "2.0s"), (1.26, "1.3s"), (0.0, ""), (0.04, "0.0s")]
)
def test_a_table_cell_keeps_one_decimal_so_a_countdown_keeps_its_width(
    value: float, shown: str
) -> None:
    assert tenths(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"), [(None, "-"), (0.0, "0s"), (0.4504, "450ms"), (1.23, "1.2s")]
)
def test_a_latency_reads_in_milliseconds_below_a_second(value: float | None, shown: str) -> None:
    assert elapsed(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-3.0, "0s"), (41.6, "42s"), (192.0, "3m12s"), (3900.0, "1h05m"), (59.6, "1m00s")],
)
def test_a_countdown_reads_at_a_glance(value: float, shown: str) -> None:
    assert countdown(value) == shown


@pytest.mark.parametrize(
    ("text", "value"),
    [("24h", 86400.0), ("90m", 5400.0), ("7d", 604800.0), ("30s", 30.0), ("1.5h", 5400.0)],
)
def test_parse_window(text: str, value: float) -> None:
    assert parse_window(text) == value


@pytest.mark.parametrize("text", ["", "24", "h", "-1h", "0m", "3 days", "1y"])
def test_parse_window_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="like 90m, 24h or 7d"):
        parse_window(text)


@pytest.mark.parametrize("text", ["24h", "90m", "7d", "30s", "2w"])
def test_a_window_is_written_back_as_a_user_would_write_it(text: str) -> None:
    shown = window(parse_window(text))
    assert parse_window(shown) == parse_window(text)
    assert shown == {"2w": "14d"}.get(text, text)
