"""A question's budget starts when the process did (cli.runtime.started): a slow start
still counts, a start the kernel cannot have meant does not."""

from __future__ import annotations

import time

import pytest

from cli.runtime import started


def marked(monkeypatch: pytest.MonkeyPatch, age: float | None) -> tuple[float, float]:
    """`mark` as `main` calls it, the kernel saying `age`: the time just before, the start."""
    monkeypatch.setattr(started, "_MARKED", None)
    monkeypatch.setattr(started, "_age_from_proc", lambda: age)
    before = time.monotonic()
    started.mark()
    start = started.process_start()
    assert start is not None
    return before, start


@pytest.mark.parametrize("age", [0.05, 5.0, 30.0])
def test_a_process_slow_to_reach_main_is_as_old_as_the_kernel_says(
    monkeypatch: pytest.MonkeyPatch, age: float
) -> None:
    """Starved or stopped and continued before `main`: those seconds were the caller's."""
    before, start = marked(monkeypatch, age)
    assert before - age - 0.5 <= start <= time.monotonic() - age


@pytest.mark.parametrize("age", [-3.0, 7200.0, None])
def test_an_age_the_kernel_cannot_mean_starts_the_budget_at_main(
    monkeypatch: pytest.MonkeyPatch, age: float | None
) -> None:
    before, start = marked(monkeypatch, age)
    assert before <= start <= time.monotonic()


def test_the_kernel_says_how_old_this_process_is() -> None:
    age = started._age_from_proc()
    if age is None:
        pytest.skip("no /proc/self/stat here")
    assert 0 <= age < 24 * 3600
