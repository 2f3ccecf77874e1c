"""stdout and stderr with the run's secrets cut out of every write.

The last line of defence, where text leaves the process: whatever prints (the answer, the
JSON, the attempts table, a notice, an error quoting a library's message), a known key
value never reaches the terminal or a pipe. Text from providers is scrubbed where it
comes in already (`gateway.redactor.RedactingProvider`, which also holds back a streamed
key split across deltas); this catches what did not come from a provider.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from gateway.redactor import Redactor


class _Scrubbed:
    """A text stream that scrubs what is written and is otherwise the stream it wraps
    (isatty, fileno, encoding...), so rich and click treat it as that stream."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor

    @property
    def wrapped(self) -> TextIO:
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.scrub(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def protect(redactor: Redactor) -> None:
    """Scrub sys.stdout and sys.stderr with `redactor` for the rest of the command.

    Not undone when the command body returns: what is printed after it (the error of a
    command that ended on an exception, the `--json` failure object, a `--debug`
    traceback) leaves the process through the same streams. A test runner that swapped
    the streams in swaps its own back. A second call replaces the first one's redactor.
    """
    if not redactor:
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, _Scrubbed):
            stream = stream.wrapped
        setattr(sys, name, _Scrubbed(stream, redactor))
