"""The attempt log: its format, its privacy default, its bounds, and concurrent appends."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

import gateway.observe.attemptlog as attemptlog
from gateway.config import Config, Deployment, LogSettings
from gateway.model import (
    Attempt,
    ErrorKind,
    Outcome,
    ProviderKind,
    Result,
    Route,
    Status,
)
from gateway.observe.attemptlog import AttemptLog, open_log, resolve_log_path, rotated_path

NOW = 1_767_225_600.25  # 2026-01-01T00:00:00.250Z

QUESTION = "My card 4242 4242 4242 4242 was charged twice, why?"
ANSWER = "Duplicate charges are reversed within five days, per the Billing article."


def fallback_result() -> Result:
    """primary rate-limited twice then failed over; fallback answered."""
    return Result(
        status=Status.ANSWERED,
        answer=ANSWER,
        deployment="fallback",
        provider="anthropic",
        model="claude-haiku-4-5",
        routed=Route.NORMAL,
        input_tokens=1834,
        elapsed_s=3.9,
        attempts=(
            Attempt("primary", 1, 429, ErrorKind.RATE_LIMIT, Outcome.RETRY, 1.0, 0.2, "rate"),
            Attempt("primary", 2, 429, ErrorKind.RATE_LIMIT, Outcome.FAIL_OVER, 0.0, 0.3, "rate"),
            Attempt("fallback", 1, 200, None, Outcome.ANSWERED, 0.0, 2.4),
        ),
    )


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_attempt_is_one_self_contained_line(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    qid = AttemptLog(path).record(fallback_result(), now=NOW, first="primary")

    lines = read_lines(path)
    assert [(line["deployment"], line["attempt"], line["decision"]) for line in lines] == [
        ("primary", 1, "retry"),
        ("primary", 2, "fail_over"),
        ("fallback", 1, "answered"),
    ]
    for n, line in enumerate(lines, start=1):
        assert line["qid"] == qid and len(qid) == 16 and int(qid, 16) >= 0
        assert line["time"] == "2026-01-01T00:00:00.250Z"
        assert (line["n"], line["of"]) == (n, 3)
        assert line["served_by"] == "fallback"
        assert line["first"] == "primary"
        assert line["outcome"] == "answered"
        assert line["routed"] == "normal"
        assert line["input_tokens"] == 1834
    assert [line["status"] for line in lines] == [429, 429, 200]
    assert [line["error_class"] for line in lines] == ["rate_limit", "rate_limit", None]
    assert [line["wait_s"] for line in lines] == [1.0, 0.0, 0.0]
    assert [line["latency_s"] for line in lines] == [0.2, 0.3, 2.4]


def test_cooled_marks_the_attempt_that_put_a_deployment_in_cooldown(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    result = Result(
        status=Status.FAILED,
        answer=None,
        deployment=None,
        provider=None,
        model=None,
        routed=Route.NORMAL,
        input_tokens=10,
        elapsed_s=1.0,
        attempts=(
            Attempt("primary", 1, 429, ErrorKind.RATE_LIMIT, Outcome.FAIL_OVER, 0.0, 0.1),
            # The input is at fault, not the deployment: no cooldown.
            Attempt("big", 1, 400, ErrorKind.CONTEXT_WINDOW, Outcome.FAIL_OVER, 0.0, 0.1),
            Attempt("keyless", 0, None, ErrorKind.AUTH, Outcome.SKIPPED, 0.0, 0.0),
            Attempt("last", 1, 401, ErrorKind.AUTH, Outcome.FAIL_OVER, 0.0, 0.1),
        ),
    )
    AttemptLog(path).record(result, now=NOW, first="primary")
    lines = read_lines(path)
    assert [line["cooled"] for line in lines] == [True, False, False, True]
    assert {line["served_by"] for line in lines} == {None}
    assert {line["outcome"] for line in lines} == {"failed"}


def test_a_question_with_no_attempts_is_still_counted(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    result = Result(Status.FATAL, None, None, None, None, Route.NORMAL, 5, 0.0, ())
    AttemptLog(path).record(result, now=NOW, first="primary")
    (line,) = read_lines(path)
    assert line["of"] == 0 and line["deployment"] is None and line["outcome"] == "fatal"


def test_no_question_or_answer_text_by_default(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    AttemptLog(path).record(fallback_result(), now=NOW, first="primary", question=QUESTION)
    raw = path.read_text()
    assert "4242" not in raw and "charged" not in raw
    assert "Duplicate" not in raw
    assert all("question" not in line and "answer" not in line for line in read_lines(path))


def test_text_only_when_enabled_and_only_once(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    log = AttemptLog(path, include_text=True)
    log.record(fallback_result(), now=NOW, first="primary", question=QUESTION)
    lines = read_lines(path)
    assert [("question" in line) for line in lines] == [False, False, True]
    assert lines[-1]["question"] == QUESTION and lines[-1]["answer"] == ANSWER


def test_file_and_the_folder_it_creates_are_private(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "attempts.jsonl"
    old = os.umask(0o022)  # a usual umask: 0700 must come from the code, not from it
    try:
        AttemptLog(path).record(fallback_result(), now=NOW, first="primary")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700  # as the state folder


def test_rotates_before_exceeding_the_cap_and_keeps_one_generation(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    one_question = len(
        attemptlog.encode(
            attemptlog.question_records(fallback_result(), qid="0" * 16, now=NOW, first="primary")
        )
    )
    log = AttemptLog(path, max_bytes=one_question * 3)
    for _ in range(20):
        log.record(fallback_result(), now=NOW, first="primary")

    assert path.stat().st_size <= one_question * 3
    assert rotated_path(path).stat().st_size <= one_question * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "attempts.jsonl",
        "attempts.jsonl.1",
        "attempts.jsonl.lock",
    ]
    # Whole questions on both sides of the cut: every line parses, three per question.
    for generation in (path, rotated_path(path)):
        lines = read_lines(generation)
        assert len(lines) % 3 == 0 and lines


def test_io_failure_warns_and_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    warnings: list[str] = []
    log = AttemptLog(blocker / "attempts.jsonl", warn=warnings.append)
    log.record(fallback_result(), now=NOW, first="primary")
    assert len(warnings) == 1 and "attempt log not written" in warnings[0]


def test_a_stuck_lock_holder_does_not_stop_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attemptlog, "_LOCK_PATIENCE_S", 0.02)
    path = tmp_path / "attempts.jsonl"
    holder = os.open(tmp_path / "attempts.jsonl.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        warnings: list[str] = []
        AttemptLog(path, warn=warnings.append).record(fallback_result(), now=NOW, first="p")
    finally:
        os.close(holder)
    assert len(read_lines(path)) == 3
    assert warnings and "lock busy" in warnings[0]


def _writer(path: str, questions: int, max_bytes: int) -> None:
    log = AttemptLog(Path(path), max_bytes=max_bytes)
    for _ in range(questions):
        log.record(fallback_result(), now=NOW, first="primary")


@pytest.mark.parametrize("max_bytes", [1 << 30, 20_000], ids=["no-rotation", "rotating"])
def test_concurrent_processes_write_only_whole_questions(tmp_path: Path, max_bytes: int) -> None:
    path = tmp_path / "attempts.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(path), 60, max_bytes)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=20)
        assert worker.exitcode == 0

    lines = read_lines(path) + (read_lines(rotated_path(path)) if max_bytes < 1 << 30 else [])
    by_question: dict[object, list[int]] = {}
    for line in lines:
        by_question.setdefault(line["qid"], []).append(int(str(line["n"])))
    # Every question's three lines arrived together and in order: no torn or split batch.
    assert all(ns == [1, 2, 3] for ns in by_question.values())
    if max_bytes == 1 << 30:
        assert len(by_question) == 4 * 60


def test_log_path_order_flag_env_config_platformdirs(tmp_path: Path) -> None:
    flag, env, configured = tmp_path / "flag.jsonl", tmp_path / "env.jsonl", tmp_path / "c.jsonl"
    settings = LogSettings(path=configured)
    environ = {"SUPPORT_ASK_LOG": str(env)}
    assert resolve_log_path(flag, environ, settings) == flag
    assert resolve_log_path(None, environ, settings) == env
    assert resolve_log_path(None, {}, settings) == configured
    default = resolve_log_path(None, {"SUPPORT_ASK_LOG": " "}, LogSettings())
    assert default.name == "attempts.jsonl" and "support-ask" in str(default)


def test_open_log_honours_no_log_and_enabled(tmp_path: Path) -> None:
    flag = tmp_path / "a.jsonl"
    off = LogSettings(enabled=False)

    def opened(**kwargs: object) -> AttemptLog | None:
        args: dict[str, object] = {"flag": None, "no_log": False, "environ": {}}
        args.update(kwargs)
        return open_log(warn=lambda message: None, **args)  # type: ignore[arg-type]

    assert opened(flag=flag, no_log=True, settings=LogSettings()) is None
    assert opened(settings=off) is None
    explicit = opened(flag=flag, settings=off)
    assert explicit is not None and explicit.path == flag
    texty = opened(flag=flag, settings=LogSettings(include_text=True, max_bytes=123))
    assert texty is not None and texty.include_text and texty.max_bytes == 123


def test_first_of_route() -> None:
    primary = Deployment("primary", ProviderKind.OPENAI, 1000)
    long = Deployment("long", ProviderKind.GEMINI, 10**6)
    config = Config(product="Acme", deployments=(primary,), long_context=long)
    assert attemptlog.first_of_route(config, Route.NORMAL) == "primary"
    assert attemptlog.first_of_route(config, Route.LONG_CONTEXT) == "long"


@pytest.mark.parametrize(
    "epoch",
    [
        0.0,
        1_700_000_000.0,
        1_700_000_000.0005,  # a millisecond's edge
        1_700_000_000.9994999,
        1_700_000_000.9999995,  # rounds up to the next second, as datetime does
        1_700_000_000.9999994,
        0.0000005,  # half a microsecond: to even, down
        0.0000015,  # half a microsecond: to even, up
        4_102_444_800.999999,  # 2100
    ],
)
def test_a_timestamp_reads_as_datetime_writes_it(epoch: float) -> None:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(epoch, tz=UTC)
    expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    assert attemptlog.format_time(epoch) == expected


def test_many_timestamps_read_as_datetime_writes_them() -> None:
    import random
    from datetime import UTC, datetime

    draw = random.Random(20261201)
    for _ in range(20_000):
        epoch = draw.uniform(0, 4e9)
        moment = datetime.fromtimestamp(epoch, tz=UTC)
        expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        assert attemptlog.format_time(epoch) == expected, epoch


def test_the_passages_sent_are_counted_never_their_text(tmp_path: Path) -> None:
    from gateway.model import Source
    from gateway.record import replace

    secret = "The vault code is 4242 and lives on passage three."
    sent = (
        Source("kb/a.md", "A", "Vault", secret, 12, 0, 2, score=3.5, coverage=0.8),
        Source("kb/b.md", "B", "", "Other text.", 3, 1, 0, score=1.0, coverage=0.6),
    )
    path = tmp_path / "attempts.jsonl"
    AttemptLog(path, include_text=True).record(
        replace(fallback_result(), articles=sent), now=NOW, first="primary"
    )
    lines = read_lines(path)
    assert [(line["passages"], line["passage_tokens"]) for line in lines] == [(2, 15)] * 3
    assert "4242" not in path.read_text() and "Vault" not in path.read_text()
