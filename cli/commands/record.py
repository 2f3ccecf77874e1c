"""What a question asked leaves in the attempt log, for `ask` and `batch` alike: its line
(the question and the chat before it scrubbed of keys, and masked), and the warning when
recent traffic leans on fallbacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.config import Config
    from gateway.model import Result, Turn
    from gateway.observe.attemptlog import AttemptLog
    from gateway.secrets.redactor import Redactor


def scrubbed(redactor: Redactor, turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """The turns with no key in them, for the log."""
    from gateway.record import replace

    return tuple(replace(t, content=redactor.scrub(t.content)) for t in turns)


def log_question(
    log: AttemptLog,
    config: Config,
    result: Result,
    question: str,
    *,
    now: float,
    thread: Sequence[Turn] = (),
) -> None:
    """One question's attempts in the log (`question` and the `thread`'s turns already
    scrubbed of keys, and masked)."""
    from gateway.observe.attemptlog import first_of_route

    first = first_of_route(config, result.routed)
    log.record(result, now=now, first=first, question=question, thread=thread)


def warn_fallback_rate(log: AttemptLog, config: Config, diag: Diag, *, now: float) -> None:
    """The config's `max_fallback_rate` crossed by recent traffic: say so on stderr."""
    if config.max_fallback_rate is not None:
        from gateway.observe.stats import recent_fallback_warning

        warning = recent_fallback_warning(log.path, config.max_fallback_rate, now)
        if warning:
            diag.warn(warning)
