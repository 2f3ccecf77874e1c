"""Summaries of timing samples, and the rows of the results table.

A row compares a candidate with a baseline measured in the same run. Its target is data
(a limit on a ratio, on added time or on an absolute figure), so judging a row is one
function rather than an `if` per benchmark.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linearly interpolated between the closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class Summary:
    """Median and spread of one series of samples (all in the same unit)."""

    n: int
    median: float
    p10: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        return cls(
            n=len(values),
            median=percentile(values, 50),
            p10=percentile(values, 10),
            p90=percentile(values, 90),
            p99=percentile(values, 99),
        )


class Unit(StrEnum):
    SECONDS = "s"
    MILLIS = "ms"
    MICROS = "us"
    MIB = "MiB"
    MB_PER_S = "MB/s"
    PER_S = "/s"
    PERCENT = "%"
    COUNT = ""


# How many of the stored unit (seconds, bytes or a count) make one displayed unit.
_SCALE = {
    Unit.SECONDS: 1.0,
    Unit.MILLIS: 1e-3,
    Unit.MICROS: 1e-6,
    Unit.MIB: 1024 * 1024,
    Unit.MB_PER_S: 1e6,  # stored as bytes per second
    Unit.PER_S: 1.0,
    Unit.PERCENT: 0.01,  # stored as a fraction
    Unit.COUNT: 1.0,
}


def show(value: float, unit: Unit) -> str:
    if math.isnan(value):
        return "-"
    scaled = value / _SCALE[unit]
    digits = 0 if abs(scaled) >= 100 else 1 if abs(scaled) >= 10 else 2
    text = f"{scaled:.{digits}f}"
    return f"{text} {unit}" if unit is not Unit.COUNT else text


class Measure(StrEnum):
    """Which figure of a row its target limits."""

    RATIO = "ratio"  # candidate median / baseline median
    ADDED_MEDIAN = "added median"  # candidate median - baseline median
    ADDED_P99 = "added p99"  # candidate p99 - baseline p99
    MEDIAN = "median"  # the candidate's own median
    TOTAL = "total"  # a single figure (e.g. lost updates), in `Row.value`
    ADDED_TOTAL = "added total"  # `Row.value` - `Row.base_value` (e.g. recall over a baseline)


@dataclass(frozen=True)
class Target:
    """Limits on a row's figures, all of which must hold: each figure <= its limit, and
    each figure >= its floor (for figures where more is better, such as recall)."""

    text: str  # how the table states it, e.g. "<= 1.3x httpx"
    limits: tuple[tuple[Measure, float], ...]
    floors: tuple[tuple[Measure, float], ...] = ()

    @classmethod
    def at_most(cls, measure: Measure, limit: float, text: str) -> Target:
        return cls(text, ((measure, limit),))

    @classmethod
    def at_least(cls, text: str, *floors: tuple[Measure, float]) -> Target:
        return cls(text, (), tuple(floors))


class Verdict(StrEnum):
    PASS = "PASS"
    MISS = "MISS"
    INFO = "info"  # no target: a figure to track


@dataclass(frozen=True)
class Row:
    """One line of the results table."""

    group: str  # the benchmark: "1 start-up", ...
    name: str  # the candidate
    unit: Unit
    cand: Summary | None = None
    base: Summary | None = None
    base_name: str = ""
    target: Target | None = None
    value: float | None = None  # for Measure.TOTAL rows: the one figure
    note: str = ""
    base_value: float | None = None  # the baseline's one figure, beside `value`

    def figure(self, measure: Measure) -> float:
        cand, base = self.cand, self.base
        if measure is Measure.TOTAL:
            return math.nan if self.value is None else self.value
        if cand is None:
            if self.value is None or self.base_value is None:
                return math.nan
            if measure is Measure.ADDED_TOTAL:
                return self.value - self.base_value
            if measure is Measure.RATIO and self.base_value > 0:
                return self.value / self.base_value
            return math.nan
        if measure is Measure.MEDIAN:
            return cand.median
        if base is None:
            return math.nan
        if measure is Measure.RATIO:
            return cand.median / base.median if base.median > 0 else math.nan
        if measure is Measure.ADDED_MEDIAN:
            return cand.median - base.median
        return cand.p99 - base.p99

    @property
    def ratio(self) -> float:
        return self.figure(Measure.RATIO)

    @property
    def verdict(self) -> Verdict:
        if self.target is None:
            return Verdict.INFO
        for measure, limit in self.target.limits:
            got = self.figure(measure)
            if math.isnan(got) or got > limit:
                return Verdict.MISS
        for measure, floor in self.target.floors:
            got = self.figure(measure)
            if math.isnan(got) or got < floor:
                return Verdict.MISS
        return Verdict.PASS


def paired_calls(iterations: int) -> int:
    """How many times `paired` calls each side: its warm-up and its `iterations` rounds."""
    return _warmup(iterations) + iterations


def _warmup(iterations: int) -> int:
    return max(10, iterations // 20)


def paired(
    cand: Callable[[], object],
    base: Callable[[], object],
    iterations: int,
    *,
    before: Callable[[], object] | None = None,
) -> tuple[Summary, Summary]:
    """Time `cand` and `base` alternately (who goes first flips each round), after a
    warm-up; returns their summaries in seconds. `before`, when given, runs untimed before
    each timed call of either side: what a real call's code finds the caches left in."""
    for _ in range(_warmup(iterations)):
        cand()
        base()
    c: list[float] = []
    b: list[float] = []
    clock = time.perf_counter_ns
    for i in range(iterations):
        for fn, out in ((cand, c), (base, b)) if i % 2 == 0 else ((base, b), (cand, c)):
            if before is not None:
                before()
            t0 = clock()
            fn()
            out.append((clock() - t0) * 1e-9)
    return Summary.of(c), Summary.of(b)


def interleaved(
    cand: Callable[[], float], base: Callable[[], float], rounds: int, warmup: int = 2
) -> tuple[Summary, Summary]:
    """Like `paired`, for calls that measure themselves (a time to first token, say): each
    returns its own figure; who goes first flips each round; `warmup` rounds are dropped."""
    c: list[float] = []
    b: list[float] = []
    for i in range(rounds + warmup):
        first, second = (cand, base) if i % 2 == 0 else (base, cand)
        got = (first(), second())
        if i >= warmup:
            c.append(got[0] if i % 2 == 0 else got[1])
            b.append(got[1] if i % 2 == 0 else got[0])
    return Summary.of(c), Summary.of(b)
