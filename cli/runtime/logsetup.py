"""-v / --debug logging on stderr, with every key the config names scrubbed from it."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from gateway.redactor import REDACTED

if TYPE_CHECKING:
    from gateway.redactor import Redactor


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """Credentials in shapes a library might log: a URL's key= parameter, an Authorization
    value, an api-key header. Known key values are replaced as well, whatever the shape.
    Compiled on first use: only -v and --debug log, and compiling them costs a plain
    question about 3 M instructions (half a percent of it)."""
    return (
        re.compile(r"(?i)([?&](?:key|api[-_]?key)=)[^&\s'\"]+"),
        re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
        re.compile(r"(?i)((?:x-api-key|api-key|x-goog-api-key)['\"]?\s*[:=,]\s*['\"]?)[^\s'\",)]+"),
    )


class RedactingFilter(logging.Filter):
    """Rewrites each record's message with the run's secrets (`redactor`) and anything in a
    credential's place replaced; never drops a record."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redactor = redactor

    def scrub(self, text: str) -> str:
        if self._redactor is not None:
            text = self._redactor.scrub(text)
        for pattern in _patterns():
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not break the CLI
            message = str(record.msg)
        record.msg = self.scrub(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


@contextmanager
def logging_to_stderr(
    *, verbose: int, debug: bool, redactor: Redactor | None = None
) -> Iterator[None]:
    """-v: INFO (every attempt); -vv or --debug: DEBUG; --debug adds the HTTP log.
    Undone on exit, so an embedding process (or a test runner) gets its logging back."""
    if not verbose and not debug:
        # Without -v the CLI says what matters itself (tables, notices, errors); library
        # warnings would otherwise reach stderr through logging's last-resort handler,
        # even with -q.
        quiet = logging.NullHandler()
        root = logging.getLogger()
        root.addHandler(quiet)
        try:
            yield
        finally:
            root.removeHandler(quiet)
        return
    level = logging.DEBUG if debug or verbose > 1 else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    root = logging.getLogger()
    http = [logging.getLogger(name) for name in ("httpx", "httpcore")]
    saved = (root.level, [h.level for h in http])
    root.addHandler(handler)
    root.setLevel(level)
    for logger in http:
        logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for logger, old in zip(http, saved[1], strict=True):
            logger.setLevel(old)
