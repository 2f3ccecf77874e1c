"""Stats figures from a known log, with `now` fixed: served, fallback share, errors, latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.model import Attempt, ErrorKind, Outcome, Result, Route, Status, Usage
from gateway.observe.attemptlog import AttemptLog, format_time, rotated_path
from gateway.observe.stats import (
    compute_stats,
    fallback_alert,
    percentile,
    read_log,
    recent_fallback_warning,
)
from gateway.units import parse_window

NOW = 1_767_225_600.0
HOUR = 3600.0


def line(
    hours_ago: float,
    qid: str,
    deployment: str,
    decision: str,
    *,
    served_by: str | None,
    first: str = "primary",
    outcome: str = "answered",
    error_class: str | None = None,
    latency: float = 0.5,
    wait: float = 0.0,
    cooled: bool = False,
) -> str:
    return json.dumps(
        {
            "v": 1,
            "time": format_time(NOW - hours_ago * HOUR),
            "qid": qid,
            "n": 1,
            "of": 1,
            "deployment": deployment,
            "attempt": 0 if decision == "skipped" else 1,
            "status": None,
            "error_class": error_class,
            "decision": decision,
            "wait_s": wait,
            "latency_s": latency,
            "cooled": cooled,
            "served_by": served_by,
            "first": first,
            "outcome": outcome,
            "routed": "long_context" if first == "long" else "normal",
            "input_tokens": 100,
        }
    )


KNOWN_LOG = [
    # q1, q2: the primary answers.
    line(1, "q1", "primary", "answered", served_by="primary", latency=1.0),
    line(2, "q2", "primary", "answered", served_by="primary", latency=2.0),
    # q3: primary rate-limited, retried, cooled down; the fallback answers.
    line(3, "q3", "primary", "retry", served_by="fallback", error_class="rate_limit", wait=1.5),
    line(
        3, "q3", "primary", "fail_over", served_by="fallback", error_class="rate_limit", cooled=True
    ),
    line(3, "q3", "fallback", "answered", served_by="fallback", latency=3.0),
    # q4: primary still cooling down (a skip, not a new error); the fallback answers.
    line(4, "q4", "primary", "skipped", served_by="fallback", error_class="rate_limit"),
    line(4, "q4", "fallback", "answered", served_by="fallback", latency=4.0),
    # q5: routed to long context, served by its first: not a fallback.
    line(5, "q5", "long", "answered", served_by="long", first="long", latency=10.0),
    # q6: everything failed: not served, so outside the fallback share.
    line(
        6, "q6", "primary", "retry", served_by=None, outcome="failed", error_class="server", wait=2
    ),
    line(
        6,
        "q6",
        "primary",
        "fail_over",
        served_by=None,
        outcome="failed",
        error_class="server",
        cooled=True,
    ),
    line(
        6,
        "q6",
        "fallback",
        "fail_over",
        served_by=None,
        outcome="failed",
        error_class="overloaded",
        cooled=True,
    ),
    '{"v": 1, "time": "2026-01-01T00:00',  # a torn line from a crash: skipped, counted
    # q7: a day and a half ago: outside the default 24h window.
    line(30, "q7", "fallback", "answered", served_by="fallback", latency=9.0),
]


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "attempts.jsonl"
    path.write_text("\n".join(KNOWN_LOG) + "\n")
    return path


def test_figures_from_a_known_log(log_path: Path) -> None:
    read = read_log(log_path)
    stats = compute_stats(read.lines, now=NOW, window_s=parse_window("24h"))

    assert read.unreadable == 1
    assert stats.questions == 6
    assert stats.served == 5
    assert stats.by_fallback == 2
    assert stats.fallback_share == pytest.approx(0.4)
    assert dict(stats.outcomes) == {"answered": 5, "failed": 1}

    by_name = {d.name: d for d in stats.deployments}
    assert list(by_name) == ["primary", "fallback", "long"]
    primary, fallback, long = by_name["primary"], by_name["fallback"], by_name["long"]

    assert (primary.served, primary.as_fallback) == (2, 0)
    assert (primary.calls, primary.skipped) == (6, 1)
    assert dict(primary.errors) == {"rate_limit": 2, "server": 2}
    assert (primary.latency_p50, primary.latency_p95) == (1.5, 2.0)
    assert primary.waited_s == pytest.approx(3.5)
    assert primary.cooldowns == 2

    assert (fallback.served, fallback.as_fallback, fallback.calls) == (2, 2, 3)
    assert dict(fallback.errors) == {"overloaded": 1}
    assert (fallback.latency_p50, fallback.latency_p95) == (3.5, 4.0)
    assert fallback.cooldowns == 1

    assert (long.served, long.as_fallback, long.latency_p50) == (1, 0, 10.0)


def test_the_window_moves_with_now_and_since(log_path: Path) -> None:
    lines = read_log(log_path).lines
    week = compute_stats(lines, now=NOW, window_s=parse_window("7d"))
    assert (week.questions, week.served, week.by_fallback) == (7, 6, 3)

    last_90m = compute_stats(lines, now=NOW, window_s=parse_window("90m"))
    assert (last_90m.questions, last_90m.fallback_share) == (1, 0.0)

    later = compute_stats(lines, now=NOW + 100 * HOUR, window_s=parse_window("24h"))
    assert later.questions == 0 and later.fallback_share is None and later.deployments == ()


def test_json_shape(log_path: Path) -> None:
    stats = compute_stats(read_log(log_path).lines, now=NOW, unreadable=1)
    data = json.loads(json.dumps(stats.as_json()))
    assert data["window"] == "24h"
    assert data["until"] == "2026-01-01T00:00:00.000Z"
    assert data["fallback_share"] == 0.4
    assert data["unreadable_lines"] == 1
    assert data["deployments"][0] == {
        "name": "primary",
        "served": 2,
        "as_fallback": 0,
        "calls": 6,
        "skipped": 1,
        "errors": {"rate_limit": 2, "server": 2},
        "latency_p50_s": 1.5,
        "latency_p95_s": 2.0,
        "waited_s": 3.5,
        "cooldowns": 2,
        "tokens_in": 0,  # lines written before usage was logged count as none
        "tokens_out": 0,
        "cost_usd": None,
        # Lines written before actions were logged: an answered question was answered.
        "deflection": {
            "questions": 2, "answered": 2, "handoff": 0, "refused": 0,
            "answered_rate": 1.0, "handoff_rate": 0.0, "refused_rate": 0.0,
        },
    }  # fmt: skip


def test_both_generations_are_read(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    rotated_path(path).write_text(KNOWN_LOG[0] + "\n")
    path.write_text(KNOWN_LOG[1] + "\n")
    assert [line.qid for line in read_log(path).lines] == ["q1", "q2"]
    assert read_log(tmp_path / "never-written.jsonl").lines == ()


def test_the_writer_and_the_reader_agree(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    result = Result(
        status=Status.ANSWERED,
        answer="ok",
        deployment="fallback",
        provider="anthropic",
        model="m",
        routed=Route.NORMAL,
        input_tokens=5,
        elapsed_s=1.0,
        attempts=(
            Attempt("primary", 1, 401, ErrorKind.AUTH, Outcome.FAIL_OVER, 0.0, 0.25),
            Attempt("fallback", 1, 200, None, Outcome.ANSWERED, 0.0, 0.75),
        ),
    )
    AttemptLog(path).record(result, now=NOW - 60, first="primary")
    stats = compute_stats(read_log(path).lines, now=NOW)
    assert (stats.questions, stats.by_fallback) == (1, 1)
    primary = stats.deployments[0]
    assert dict(primary.errors) == {"auth": 1} and primary.cooldowns == 1
    assert stats.deployments[1].latency_p50 == 0.75


def test_usage_and_cost_are_summed_per_deployment_over_every_call(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"

    def asked(*attempts: Attempt) -> Result:
        return Result(
            status=Status.ANSWERED,
            answer="ok",
            deployment=attempts[-1].deployment,
            provider="openai",
            model="m",
            routed=Route.NORMAL,
            input_tokens=5,
            elapsed_s=1.0,
            attempts=attempts,
        )

    cut = Attempt(
        "primary", 1, 200, ErrorKind.OUTPUT_LIMIT, Outcome.FAIL_OVER, 0.0, 1.0,
        usage=Usage(1000, 400), cost_usd=0.00039,
    )  # fmt: skip
    whole = Attempt("fallback", 1, 200, None, Outcome.ANSWERED, 0.0, 1.0, usage=Usage(1000, 50))
    quick = Attempt(
        "primary", 1, 200, None, Outcome.ANSWERED, 0.0, 0.5,
        usage=Usage(800, 60), cost_usd=0.000156,
    )  # fmt: skip
    unsaid = Attempt("primary", 1, 200, None, Outcome.ANSWERED, 0.0, 0.5, usage=Usage())
    log = AttemptLog(path)
    log.record(asked(cut, whole), now=NOW - 60, first="primary")
    log.record(asked(quick), now=NOW - 30, first="primary")
    log.record(asked(unsaid), now=NOW - 10, first="primary")
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    assert (lines[0]["tokens_in"], lines[0]["tokens_out"], lines[0]["cost_usd"]) == (
        1000,
        400,
        0.00039,
    )
    stats = compute_stats(read_log(path).lines, now=NOW)
    primary, fallback = stats.deployments
    assert (primary.tokens_in, primary.tokens_out) == (1800, 460)
    assert primary.cost_usd == pytest.approx(0.000546)
    assert (fallback.tokens_in, fallback.tokens_out, fallback.cost_usd) == (1000, 50, None)


def test_alert_only_above_the_threshold(log_path: Path) -> None:
    stats = compute_stats(read_log(log_path).lines, now=NOW)
    alert = fallback_alert(stats, 0.2)
    assert alert is not None
    assert "40%" in alert and "20%" in alert and "2 of 5" in alert and "fallback 2" in alert
    assert fallback_alert(stats, 0.4) is None  # equal is not above
    assert fallback_alert(stats, 0.5) is None
    empty = compute_stats([], now=NOW)
    assert fallback_alert(empty, 0.0) is None


def test_recent_warning_reads_only_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    old_good = [line(2, f"g{i}", "primary", "answered", served_by="primary") for i in range(200)]
    recent_bad = [
        line(1, f"b{i}", "fallback", "answered", served_by="fallback", first="primary")
        for i in range(10)
    ]
    path.write_text("\n".join(old_good + recent_bad) + "\n")
    tail = sum(len(text) + 1 for text in recent_bad) + 40  # the recent lines and a fragment

    warning = recent_fallback_warning(path, 0.2, NOW, tail_bytes=tail)
    assert warning is not None and "100%" in warning and "10 of 10" in warning
    # Reading the whole log, the good history dilutes the share below the threshold.
    assert recent_fallback_warning(path, 0.2, NOW, tail_bytes=1 << 20) is None


def test_recent_warning_needs_enough_questions_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    path.write_text(line(1, "b", "fallback", "answered", served_by="fallback") + "\n")
    assert recent_fallback_warning(path, 0.2, NOW) is None  # one question is no trend
    assert recent_fallback_warning(path, 0.2, NOW, min_served=1) is not None
    assert recent_fallback_warning(tmp_path / "missing.jsonl", 0.2, NOW) is None
    assert recent_fallback_warning(tmp_path, 0.2, NOW) is None  # a directory: no warning


def test_recent_warning_spills_into_the_rotated_generation(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    bad = [line(1, f"b{i}", "fallback", "answered", served_by="fallback") for i in range(6)]
    rotated_path(path).write_text("\n".join(bad[:5]) + "\n")
    path.write_text(bad[5] + "\n")
    assert recent_fallback_warning(path, 0.2, NOW) is not None


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.95) is None
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([float(n) for n in range(20, 0, -1)], 0.95) == 19.0
    assert percentile([float(n) for n in range(1, 101)], 0.95) == 95.0


def test_deflection_per_day_and_per_deployment(tmp_path: Path) -> None:
    def line(
        qid: str, hours_ago: float, served: str | None, outcome: str, action: str | None
    ) -> str:
        return json.dumps({
            "v": 1, "time": format_time(NOW - hours_ago * 3600), "qid": qid, "n": 1, "of": 1,
            "deployment": served, "attempt": 1, "status": 200, "error_class": None,
            "decision": "answered", "wait_s": 0.0, "latency_s": 0.5, "cooled": False,
            "served_by": served, "first": "primary", "outcome": outcome, "action": action,
        })  # fmt: skip

    path = tmp_path / "attempts.jsonl"
    path.write_text("\n".join([
        line("a", 30, "primary", "answered", "answer"),
        line("b", 29, "primary", "answered", "handoff"),
        line("c", 2, None, "answered", "handoff"),  # not covered: no deployment asked
        line("d", 1, "fallback", "refused", None),
        line("e", 1, "primary", "answered", "answer"),
    ]) + "\n")  # fmt: skip
    stats = compute_stats(read_log(path).lines, now=NOW, window_s=2 * 86400)
    assert stats.deflection.as_json() == {
        "questions": 5, "answered": 2, "handoff": 2, "refused": 1,
        "answered_rate": 0.4, "handoff_rate": 0.4, "refused_rate": 0.2,
    }  # fmt: skip
    days = {day: (d.questions, d.answered, d.handoff, d.refused) for day, d in stats.days}
    assert days == {"2025-12-30": (2, 1, 1, 0), "2025-12-31": (3, 1, 1, 1)}
    by_name = {d.name: d.deflection for d in stats.deployments}
    assert (by_name["primary"].answered, by_name["primary"].handoff) == (2, 1)
    assert (by_name["fallback"].questions, by_name["fallback"].refused) == (1, 1)
