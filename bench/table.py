"""The results table: plain text for a terminal, or Markdown for bench/RESULTS.md."""

from __future__ import annotations

import math
from collections.abc import Sequence

from bench.stats import Measure, Row, Unit, Verdict, show

HEADER = (
    "benchmark",
    "candidate",
    "median",
    "p10-p90",
    "baseline",
    "base median",
    "ratio",
    "added med / p99",
    "target",
    "verdict",
)


def _cells(row: Row) -> tuple[str, ...]:
    unit = row.unit
    if row.cand is None:
        median = "-" if row.value is None else show(row.value, unit)
        spread = ""
    else:
        median = show(row.cand.median, unit)
        spread = f"{show(row.cand.p10, unit)} - {show(row.cand.p90, unit)}"
    base_median = "" if row.base is None else show(row.base.median, unit)
    if row.base is None and row.base_value is not None:
        base_median = show(row.base_value, unit)
    ratio = row.ratio
    ratio_text = "" if math.isnan(ratio) else f"{ratio:.2f}x"
    added = ""
    if row.cand is not None and row.base is not None and (unit is not Unit.MIB or row.target):
        added = (
            f"{show(row.figure(Measure.ADDED_MEDIAN), unit)} / "
            f"{show(row.figure(Measure.ADDED_P99), unit)}"
        )
    elif row.cand is None and row.value is not None and row.base_value is not None:
        added = show(row.figure(Measure.ADDED_TOTAL), unit)
    target = "" if row.target is None else row.target.text
    verdict = str(row.verdict) if row.verdict is not Verdict.INFO or row.target else ""
    name = row.name if not row.note else f"{row.name} ({row.note})"
    return (
        row.group,
        name,
        median,
        spread,
        row.base_name,
        base_median,
        ratio_text,
        added,
        target,
        verdict,
    )


def render(rows: Sequence[Row], *, markdown: bool = False) -> str:
    body = [_cells(r) for r in rows]
    if markdown:
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max([len(h), *(len(c[i]) for c in body)]) for i, h in enumerate(HEADER)]
    out = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    last_group = None
    for cells in body:
        shown = list(cells)
        if cells[0] == last_group:
            shown[0] = ""  # group once, so the benchmarks read as blocks
        last_group = cells[0]
        out.append("  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True)).rstrip())
    return "\n".join(out)
