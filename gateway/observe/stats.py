"""Figures from the attempt log: who served, how often a fallback did, what failed, how slow.

Definitions (they are what `support-ask stats` prints, so they are precise):

- A question is *served* when a deployment delivered its reply (status answered or
  refused); a failed or fatal question is counted in `outcomes` but served by no one.
- The *fallback share* is, over the window, the questions served by a deployment other
  than the first deployment of their route (`first` in the log: the first normal
  deployment, or the long-context one when the input was routed there), divided by the
  questions served. A question that failed entirely is not in either count: it is a
  worse problem, shown in `outcomes`, and it must not dilute or inflate the share. None
  when nothing was served.
- Per deployment: `served` questions; `as_fallback`, those of them it served while not
  its route's first; `calls` made (skips excluded) and `skipped` turns; `errors` by class,
  counted over calls only (a skip carrying a cooldown's class is not a new error);
  `latency_p50`/`latency_p95` over its answered attempts (median, and nearest-rank 95th
  percentile); `waited_s`, the backoff waits taken after its attempts; `cooldowns`, the
  attempts that put it in cooldown (`cooled` in the log); `tokens_in`/`tokens_out`, the
  tokens its providers reported over every call (a cut-short reply was billed too), and
  `cost_usd`, the sum of its priced calls (None when it has no price in the log).

- *Deflection*, what a support team reports: of the questions asked, the share
  `answered` (posted: action `answer`), `handoff` (given to a person: action `handoff`,
  for any reason) and `refused`; the rest failed. Over the window, per day (UTC) and per
  deployment (the questions it served; a `not_covered` handoff asked no deployment, so it
  counts only in the window's and its day's). A line logged before actions were (no
  `action`) counts an answered question as answered.

Everything here is pure but for reading the file: `compute_stats` takes the lines and
`now`, so a test hands it a known log and a fixed time.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from gateway.model import ErrorKind, Outcome, Status
from gateway.observe.attemptlog import rotated_path
from gateway.record import record
from gateway.units import window

DEFAULT_WINDOW_S = 24 * 3600.0
# What `recent_fallback_warning` reads: the log's last bytes (about a few hundred
# questions), so every ask pays for a small read, never for the whole log.
RECENT_TAIL_BYTES = 64 * 1024
RECENT_MIN_SERVED = 5  # below this, one fallback would read as a 100% share


@record
class LogLine:
    """One attempt line of the log, parsed (see `gateway.observe.attemptlog` for the format)."""

    time: float
    qid: str
    deployment: str | None
    attempt: int | None
    error_class: ErrorKind | None
    decision: Outcome | None
    wait_s: float
    latency_s: float
    cooled: bool
    served_by: str | None
    first: str | None
    outcome: Status
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    action: str | None = None  # "answer" | "handoff"; None: nothing answered, or an old line


def parse_line(text: str) -> LogLine | None:
    """A log line, or None for anything that is not one (a torn or foreign line)."""
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            return None
        error_class = raw.get("error_class")
        decision = raw.get("decision")
        return LogLine(
            time=datetime.fromisoformat(raw["time"]).timestamp(),
            qid=str(raw["qid"]),
            deployment=_opt_str(raw.get("deployment")),
            attempt=None if raw.get("attempt") is None else int(raw["attempt"]),
            error_class=None if error_class is None else ErrorKind(error_class),
            decision=None if decision is None else Outcome(decision),
            wait_s=float(raw.get("wait_s") or 0.0),
            latency_s=float(raw.get("latency_s") or 0.0),
            cooled=bool(raw.get("cooled", False)),
            served_by=_opt_str(raw.get("served_by")),
            first=_opt_str(raw.get("first")),
            outcome=Status(raw["outcome"]),
            # absent from lines written before usage was logged
            tokens_in=_opt_int(raw.get("tokens_in")),
            tokens_out=_opt_int(raw.get("tokens_out")),
            cost_usd=None if raw.get("cost_usd") is None else float(raw["cost_usd"]),
            action=_opt_str(raw.get("action")),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@record
class LogRead:
    lines: tuple[LogLine, ...]
    unreadable: int  # lines that were not log lines (torn, foreign): reported, not fatal


def read_log(path: Path, *, since: float | None = None) -> LogRead:
    """Both generations of the log, oldest first; lines older than `since` dropped.

    A missing file is an empty log (nobody has asked yet); other OSErrors propagate so
    the `stats` command can say it could not read the log.
    """
    return _parse(_file_lines(rotated_path(path)) + _file_lines(path), since)


def read_recent(path: Path, *, max_bytes: int = RECENT_TAIL_BYTES) -> LogRead:
    """At most the last `max_bytes` of the log (spilling into the older generation)."""
    current, used = _tail(path, max_bytes)
    older, _ = _tail(rotated_path(path), max_bytes - used)
    return _parse(older + current, None)


def _parse(texts: Iterable[str], since: float | None) -> LogRead:
    lines: list[LogLine] = []
    bad = 0
    for text in texts:
        if not text.strip():
            continue
        line = parse_line(text)
        if line is None:
            bad += 1
        elif since is None or line.time >= since:
            lines.append(line)
    return LogRead(tuple(lines), bad)


def _file_lines(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return _split(data)


def _tail(path: Path, max_bytes: int) -> tuple[list[str], int]:
    """The whole lines within the last `max_bytes` of `path`, and the bytes read."""
    if max_bytes <= 0:
        return [], 0
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return [], 0
    texts = _split(data)
    # A tail that starts mid-file starts mid-line: drop the fragment.
    return (texts[1:] if start > 0 else texts), len(data)


def _split(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").split("\n") if data else []


@record
class Deflection:
    """What became of some questions: posted, handed to a person, refused (the rest failed)."""

    questions: int = 0
    answered: int = 0
    handoff: int = 0
    refused: int = 0

    @staticmethod
    def of(questions: Iterable[LogLine]) -> Deflection:
        counts = Counter(_fate(q) for q in questions)
        return Deflection(
            sum(counts.values()), counts["answered"], counts["handoff"], counts["refused"]
        )

    def as_json(self) -> dict[str, object]:
        def rate(count: int) -> float | None:
            return None if not self.questions else round(count / self.questions, 4)

        return {
            "questions": self.questions,
            "answered": self.answered,
            "handoff": self.handoff,
            "refused": self.refused,
            "answered_rate": rate(self.answered),
            "handoff_rate": rate(self.handoff),
            "refused_rate": rate(self.refused),
        }


def _fate(question: LogLine) -> str:
    if question.action == "handoff":
        return "handoff"
    if question.outcome is Status.REFUSED:
        return "refused"
    if question.outcome is Status.ANSWERED:
        return "answered"
    return "failed"


@record
class DeploymentStats:
    name: str
    served: int
    as_fallback: int
    calls: int
    skipped: int
    errors: tuple[tuple[str, int], ...]  # (error class, count), most frequent first
    latency_p50: float | None
    latency_p95: float | None
    waited_s: float
    cooldowns: int
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    deflection: Deflection = Deflection()  # of the questions it served

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "served": self.served,
            "as_fallback": self.as_fallback,
            "calls": self.calls,
            "skipped": self.skipped,
            "errors": dict(self.errors),
            "latency_p50_s": _round(self.latency_p50),
            "latency_p95_s": _round(self.latency_p95),
            "waited_s": round(self.waited_s, 3),
            "cooldowns": self.cooldowns,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": _round(self.cost_usd, 6),
            "deflection": self.deflection.as_json(),
        }


@record
class Stats:
    since: float
    until: float
    questions: int
    served: int
    by_fallback: int
    outcomes: tuple[tuple[str, int], ...]  # (question status, count)
    deployments: tuple[DeploymentStats, ...]
    unreadable: int = 0
    deflection: Deflection = Deflection()
    days: tuple[tuple[str, Deflection], ...] = ()  # (UTC day, its questions), in order

    @property
    def fallback_share(self) -> float | None:
        return None if self.served == 0 else self.by_fallback / self.served

    @property
    def window(self) -> str:
        return window(self.until - self.since)

    def as_json(self) -> dict[str, object]:
        return {
            "schema_version": 1,
            "window": self.window,
            "since": _iso(self.since),
            "until": _iso(self.until),
            "questions": self.questions,
            "served": self.served,
            "served_by_fallback": self.by_fallback,
            "fallback_share": _round(self.fallback_share, 4),
            "outcomes": dict(self.outcomes),
            "deployments": [d.as_json() for d in self.deployments],
            "unreadable_lines": self.unreadable,
            "deflection": self.deflection.as_json(),
            "days": [{"day": day, **d.as_json()} for day, d in self.days],
        }


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _iso(epoch: float) -> str:
    from gateway.observe.attemptlog import format_time

    return format_time(epoch)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile: a value that was really observed, never interpolated."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def compute_stats(
    lines: Iterable[LogLine], *, now: float, window_s: float = DEFAULT_WINDOW_S, unreadable: int = 0
) -> Stats:
    """The figures over `[now - window_s, now]`. Pure: same lines and now, same Stats."""
    since = now - window_s
    kept = [line for line in lines if since <= line.time <= now]

    questions: dict[str, LogLine] = {}
    order: dict[str, None] = {}  # deployments as they first appear: roughly config order
    for line in kept:
        questions.setdefault(line.qid, line)
        for name in (line.first, line.deployment):
            if name is not None:
                order.setdefault(name)
    for question in questions.values():  # after the attempts, which follow config order
        if question.served_by is not None:
            order.setdefault(question.served_by)

    served_by = Counter(q.served_by for q in questions.values() if q.served_by is not None)
    as_fallback = Counter(
        q.served_by for q in questions.values() if q.served_by is not None and _is_fallback(q)
    )
    outcomes = Counter(str(q.outcome) for q in questions.values())

    deployments = tuple(
        _deployment_stats(
            name,
            [line for line in kept if line.deployment == name],
            served=served_by[name],
            as_fallback=as_fallback[name],
            deflection=Deflection.of(q for q in questions.values() if q.served_by == name),
        )
        for name in order
    )
    by_day: dict[str, list[LogLine]] = {}
    for question in sorted(questions.values(), key=lambda q: q.time):
        by_day.setdefault(_iso(question.time)[:10], []).append(question)
    return Stats(
        since=since,
        until=now,
        questions=len(questions),
        served=sum(served_by.values()),
        by_fallback=sum(as_fallback.values()),
        outcomes=tuple(sorted(outcomes.items())),
        deployments=deployments,
        unreadable=unreadable,
        deflection=Deflection.of(questions.values()),
        days=tuple((day, Deflection.of(group)) for day, group in by_day.items()),
    )


def _is_fallback(question: LogLine) -> bool:
    return question.first is not None and question.served_by != question.first


def _deployment_stats(
    name: str,
    lines: Sequence[LogLine],
    *,
    served: int,
    as_fallback: int,
    deflection: Deflection,
) -> DeploymentStats:
    calls = [line for line in lines if line.decision is None or line.decision.called]
    errors = Counter(str(line.error_class) for line in calls if line.error_class is not None)
    latencies = [line.latency_s for line in calls if line.decision is Outcome.ANSWERED]
    return DeploymentStats(
        name=name,
        served=served,
        as_fallback=as_fallback,
        calls=len(calls),
        skipped=len(lines) - len(calls),
        errors=tuple(sorted(errors.items(), key=lambda item: (-item[1], item[0]))),
        latency_p50=statistics.median(latencies) if latencies else None,
        latency_p95=percentile(latencies, 0.95),
        waited_s=sum(line.wait_s for line in lines),
        cooldowns=sum(1 for line in lines if line.cooled),
        tokens_in=sum(line.tokens_in or 0 for line in calls),
        tokens_out=sum(line.tokens_out or 0 for line in calls),
        cost_usd=_total(line.cost_usd for line in calls),
        deflection=deflection,
    )


def _total(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def fallback_alert(stats: Stats, threshold: float) -> str | None:
    """A one-line alert when the fallback share is above `threshold` (0..1), else None."""
    share = stats.fallback_share
    if share is None or share <= threshold:
        return None
    fallbacks = ", ".join(
        f"{d.name} {d.as_fallback}" for d in stats.deployments if d.as_fallback > 0
    )
    return (
        f"fallback share {share:.0%} is above {threshold:.0%} over the last {stats.window}: "
        f"{stats.by_fallback} of {stats.served} answered questions were served by a fallback"
        f" ({fallbacks})"
    )


def recent_fallback_warning(
    log_path: Path,
    threshold: float,
    now: float,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    tail_bytes: int = RECENT_TAIL_BYTES,
    min_served: int = RECENT_MIN_SERVED,
) -> str | None:
    """The warning every ask prints on stderr, or None. Reads only the log's tail.

    Recent means the questions in the last `tail_bytes` of the log that are also within
    `window_s` of `now`. Needs `min_served` served questions before it speaks, so a single
    fallback on a quiet day is not a 100% alarm. Never raises: an unreadable log is
    simply no warning (the log writer already warned about it).
    """
    try:
        read = read_recent(log_path, max_bytes=tail_bytes)
    except OSError:
        return None
    stats = compute_stats(read.lines, now=now, window_s=window_s)
    if stats.served < min_served:
        return None
    return fallback_alert(stats, threshold)
