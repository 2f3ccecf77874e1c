"""The attempt log: one JSON line per attempt, appended after every question.

Why a line per attempt rather than per question: `grep rate_limit attempts.jsonl` or
`jq 'select(.deployment == "primary")'` then works with no unnesting, and every line is
self-contained because the question's facts (`qid`, `served_by`, `first`, `outcome`,
`routed`, `input_tokens`) are repeated on each of its lines.

A line (schema `v` 1)::

    {"v": 1, "time": "2025-01-02T03:04:05.678Z", "qid": "9f2c41d07ab35e11",
     "n": 2, "of": 3,                       # this attempt's place among the question's lines
     "deployment": "primary", "attempt": 2, "status": 429, "error_class": "rate_limit",
     "decision": "fail_over", "wait_s": 0.0, "latency_s": 0.412, "cooled": true,
     "tokens_in": null, "tokens_out": null, "cost_usd": null,
     "served_by": "fallback", "first": "primary", "outcome": "answered",
     "action": "answer", "handoff": null,
     "routed": "normal", "input_tokens": 1834, "passages": 9, "passage_tokens": 2210,
     "turns": 2, "turns_left_out": 0, "turn_tokens": 41}

- `time` is when the question finished (UTC); all of a question's lines share it.
- `latency_s` is the attempt's own duration; `wait_s` the backoff taken after it.
- `cooled` says the attempt put its deployment in cooldown: it failed over with an error
  class that cools (`cools` in `gateway.engine.table`).
- `first` is the first deployment of the question's route (the first normal deployment,
  or the long-context one when the input was routed there); a question served by any
  other deployment was served by a fallback.
- `tokens_in` / `tokens_out` are the attempt's usage as its provider reported it (null
  when no reply came or the provider did not say); `cost_usd` its price when the
  deployment has one (`price`) and both counts are known.
- `served_by` is null when no deployment answered; `outcome` is the question's status.
- `action` is what a script does with it (`answer`, `handoff`; null when nothing
  answered) and `handoff` the handoff's reason (`not_covered`, `model`, `uncited`), never
  its detail: a model's reason may repeat the customer's words. A `not_covered` handoff
  asked no deployment: its one line has no attempt.
- `passages` and `passage_tokens` say how much of the help centre the prompt held (the
  passages, or whole articles, and their estimated tokens); never their text.
- `turns`, `turns_left_out` and `turn_tokens` say how much of a chat's thread was sent
  (0 for a question asked alone); never its text.
- A question with no attempts at all still gets one line, with `of` 0 and null attempt
  fields, so it is counted.

Metadata only: the question and answer text are customer data and appear only when
`LogSettings.include_text` is on, and then only on the question's last line (`question`,
`answer`, and a chat's `thread`, masked like the question). Article text never appears.

Bounds and concurrency: before a write that would take the file past `max_bytes`, the
file is rotated to `<name>.1` (one older generation kept, so the log never holds much more
than twice `max_bytes`). A question's lines are written as one bytes object with a single
`os.write` on an `O_APPEND` descriptor, so concurrent invocations never interleave half
lines; rotation happens under an `flock` on a sidecar `<name>.lock` file so two processes
never rotate the same generation twice. Files are created mode 0600.

Nothing here ever raises to the caller for an I/O problem: an answer matters more than
its log line, so the problem goes to `warn` and the question carries on.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from gateway.config import Config, LogSettings
from gateway.engine.table import TABLE
from gateway.model import Attempt, Outcome, Result, Route, Status, Turn

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 1
LOG_ENV = "SUPPORT_ASK_LOG"
LOG_NAME = "attempts.jsonl"
ROTATED_SUFFIX = ".1"
LOCK_SUFFIX = ".lock"

# How long a writer waits for the rotation lock before appending without it. A stuck
# process holding the lock must not stall every ask; an unlocked O_APPEND write is still
# whole, only the rotation check is skipped this once.
_LOCK_PATIENCE_S = 1.0


def resolve_log_path(flag: Path | None, environ: Mapping[str, str], settings: LogSettings) -> Path:
    """Where the log lives: --log, then $SUPPORT_ASK_LOG, then log.path, then platformdirs."""
    if flag is not None:
        return flag
    from_env = environ.get(LOG_ENV, "").strip()
    if from_env:
        return Path(from_env).expanduser()
    if settings.path is not None:
        return settings.path.expanduser()
    from gateway.config.find import user_dir

    return user_dir("log") / LOG_NAME


def rotated_path(path: Path) -> Path:
    """The older generation of `path`, kept after a rotation."""
    return path.with_name(path.name + ROTATED_SUFFIX)


def first_of_route(config: Config, routed: Route) -> str | None:
    """The deployment a question on this route is meant to be served by."""
    if routed is Route.LONG_CONTEXT and config.long_context is not None:
        return config.long_context.name
    return config.deployments[0].name if config.deployments else None


def new_question_id() -> str:
    # What secrets.token_hex(8) returns, without importing secrets: it brings hmac, random
    # and hashlib (OpenSSL), ~19 M instructions that an offline answer needs for nothing.
    return os.urandom(8).hex()


def format_time(epoch: float) -> str:
    """UTC, millisecond precision, `Z` suffix: sortable and readable in a terminal.

    What `datetime.fromtimestamp(epoch, UTC)` gives, its rounding to the microsecond (half
    to even) included, without importing datetime: ~4 M instructions, 1% of an offline
    answer, for one timestamp."""
    fraction, whole = math.modf(epoch)
    micro = round(fraction * 1_000_000.0)
    if micro >= 1_000_000:
        micro, whole = micro - 1_000_000, whole + 1.0
    elif micro < 0:
        micro, whole = micro + 1_000_000, whole - 1.0
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole)) + f"{micro // 1000:03d}Z"


def _cooled(attempt: Attempt) -> bool:
    if attempt.outcome is not Outcome.FAIL_OVER or attempt.error_class is None:
        return False
    return TABLE[attempt.error_class].cools


def _served_by(result: Result) -> str | None:
    if result.status in (Status.ANSWERED, Status.REFUSED):
        return result.deployment
    return None


def question_records(
    result: Result,
    *,
    qid: str,
    now: float,
    first: str | None,
    question: str | None = None,
    thread: Sequence[Turn] = (),
) -> list[dict[str, object]]:
    """The log lines for one question, as dicts. `question` is included only when given.

    The caller decides privacy: pass `question` only when text logging is on (the answer
    text, and the chat's turns before the question, travel with it for the same reason).
    Of the chat, every line says only how many turns were sent and left out, and their
    tokens.
    """
    shared: dict[str, object] = {
        "served_by": _served_by(result),
        "first": first,
        "outcome": str(result.status),
        "action": None if result.action is None else str(result.action),
        "handoff": None if result.handoff is None else str(result.handoff.reason),
        "routed": str(result.routed),
        "input_tokens": result.input_tokens,
        # How much of the help centre was sent: counts only, never a passage's text.
        "passages": len(result.articles),
        "passage_tokens": sum(s.tokens for s in result.articles),
        "turns": result.turns,
        "turns_left_out": result.turns_left_out,
        "turn_tokens": result.turn_tokens,
    }
    stamp = format_time(now)
    attempts: Sequence[Attempt | None] = result.attempts or (None,)
    total = len(result.attempts)
    lines: list[dict[str, object]] = []
    for index, attempt in enumerate(attempts, start=1):
        line: dict[str, object] = {"v": SCHEMA_VERSION, "time": stamp, "qid": qid}
        line["n"] = index if attempt is not None else 0
        line["of"] = total
        if attempt is None:
            line.update(
                deployment=None,
                attempt=None,
                status=None,
                error_class=None,
                decision=None,
                wait_s=0.0,
                latency_s=0.0,
                cooled=False,
                tokens_in=None,
                tokens_out=None,
                cost_usd=None,
            )
        else:
            line.update(
                deployment=attempt.deployment,
                attempt=attempt.attempt,
                status=attempt.status,
                error_class=None if attempt.error_class is None else str(attempt.error_class),
                decision=str(attempt.outcome),
                wait_s=round(attempt.wait_s, 3),
                latency_s=round(attempt.elapsed_s, 3),
                cooled=_cooled(attempt),
                tokens_in=None if attempt.usage is None else attempt.usage.input_tokens,
                tokens_out=None if attempt.usage is None else attempt.usage.output_tokens,
                cost_usd=attempt.as_json()["cost_usd"],
            )
        line.update(shared)
        lines.append(line)
    if question is not None:
        lines[-1]["question"] = question
        lines[-1]["answer"] = result.answer
        if thread:
            lines[-1]["thread"] = [{"role": str(t.role), "content": t.content} for t in thread]
    return lines


def encode(lines: Sequence[Mapping[str, object]]) -> bytes:
    """One bytes object for a whole question: the unit of an atomic append."""
    text = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    )
    return text.encode("utf-8")


class AttemptLog:
    """Appends questions to one JSON Lines file, bounded by rotation."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = LogSettings.max_bytes,
        include_text: bool = False,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.include_text = include_text
        self._warn = warn

    def record(
        self,
        result: Result,
        *,
        now: float,
        first: str | None,
        question: str | None = None,
        thread: Sequence[Turn] = (),
    ) -> str:
        """Log one question's attempts; returns its id. Never raises for I/O trouble.

        `now` is the wall-clock time the question finished (epoch seconds); `question` is
        dropped unless the log was opened with `include_text`.
        """
        qid = new_question_id()
        lines = question_records(
            result,
            qid=qid,
            now=now,
            first=first,
            question=question if self.include_text else None,
            thread=thread if self.include_text else (),
        )
        self.append(encode(lines))
        return qid

    def append(self, data: bytes) -> None:
        try:
            # Private like the state folder: the log says who asked what, and when.
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with self._rotation_lock() as locked:
                # Unlocked, another process may be mid-rotation: skip ours this once.
                if locked:
                    self._rotate_if_full(len(data))
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written = os.write(fd, data)
                finally:
                    os.close(fd)
            if written != len(data):
                self._warn(f"attempt log {self.path}: short write ({written} of {len(data)} bytes)")
        except OSError as exc:
            self._warn(f"attempt log not written: {self.path}: {exc.strerror or exc}")

    def _rotate_if_full(self, incoming: int) -> None:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        if size > 0 and size + incoming > self.max_bytes:
            os.replace(self.path, rotated_path(self.path))

    @contextlib.contextmanager
    def _rotation_lock(self) -> Iterator[bool]:
        """Hold the sidecar lock; yields whether it was got within the patience."""
        if fcntl is None:  # no flock (Windows): appends stay whole, rotation is best effort
            yield True
            return
        lock_path = self.path.with_name(self.path.name + LOCK_SUFFIX)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            locked = _acquire(fd)
            if not locked:
                self._warn(f"attempt log {self.path}: lock busy; appending without rotating")
            try:
                yield locked
            finally:
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _acquire(fd: int) -> bool:
    assert fcntl is not None
    deadline = time.monotonic() + _LOCK_PATIENCE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def open_log(
    *,
    flag: Path | None,
    no_log: bool,
    environ: Mapping[str, str],
    settings: LogSettings,
    warn: Callable[[str], None],
) -> AttemptLog | None:
    """The CLI's one call: the log to write to, or None when logging is off.

    `--no-log` always wins; an explicit `--log PATH` turns logging on even when the config
    says `enabled: false` (the user just asked for it).
    """
    if no_log or (flag is None and not settings.enabled):
        return None
    return AttemptLog(
        resolve_log_path(flag, environ, settings),
        max_bytes=settings.max_bytes,
        include_text=settings.include_text,
        warn=warn,
    )
