"""stdout and stderr with the run's secrets cut out of every write.

The last line of defence, where text leaves the process: whatever prints (the answer, the
JSON, the attempts table, a notice, an error quoting a library's message), a known key
value never reaches the terminal or a pipe. Text from providers is scrubbed where it
comes in already (`gateway.redactor.RedactingProvider`, which also holds back a streamed
key split across deltas); this catches what did not come from a provider.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from gateway.redactor import Redactor


class _Scrubbed:
    """A text stream that scrubs what is written and is otherwise the stream it wraps
    (isatty, fileno, encoding...), so rich and click treat it as that stream."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.scrub(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextmanager
def scrubbed_stdio(redactor: Redactor) -> Iterator[None]:
    """sys.stdout and sys.stderr scrubbed by `redactor` inside the block (nothing to do
    when it knows no secret)."""
    if not redactor:
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout = _Scrubbed(saved[0], redactor)  # type: ignore[assignment]
    sys.stderr = _Scrubbed(saved[1], redactor)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
