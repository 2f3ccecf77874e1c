"""-v / --debug logging on stderr, with every key the config names scrubbed from it."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gateway.secrets.shapes import redact_text

if TYPE_CHECKING:
    from gateway.secrets.redactor import Redactor


class RedactingFilter(logging.Filter):
    """Rewrites each record's message with the run's secrets (`redactor`) and anything
    shaped like a credential (`gateway.secrets.shapes`: a URL's key= parameter, an
    Authorization value, an api-key header, a key standing alone) replaced; never drops a
    record."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redactor = redactor

    def scrub(self, text: str) -> str:
        if self._redactor is not None:
            text = self._redactor.scrub(text)
        return redact_text(text)

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
