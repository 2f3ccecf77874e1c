"""stdout and stderr with the run's secrets cut out of every write.

The last line of defence, where text leaves the process: whatever prints (the answer, the
JSON, the attempts table, a notice, an error quoting a library's message), a known key
value never reaches the terminal or a pipe. Text from providers is scrubbed where it
comes in already (`gateway.providers.redaction.RedactingProvider`, which also holds back a
streamed key split across deltas); this catches what did not come from a provider.

stderr (notices, errors, tables, tracebacks: never the answer) also loses anything shaped
like a credential (`gateway.secrets.shapes.redact_text`), whoever's it is. stdout does not:
it carries the answer, which is the customer's and may quote a help-centre page, and a
streamed answer arrives in pieces that a shape could straddle, so judging it by shape
would change it between `--stream` and not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from gateway.secrets.shapes import redact_text

if TYPE_CHECKING:
    from gateway.secrets.redactor import Redactor


class _Scrubbed:
    """A text stream that scrubs what is written and is otherwise the stream it wraps
    (isatty, fileno, encoding...), so rich and click treat it as that stream."""

    def __init__(self, stream: TextIO, scrub: Callable[[str], str]) -> None:
        self._stream = stream
        self._scrub = scrub

    @property
    def wrapped(self) -> TextIO:
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(self._scrub(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def protect(redactor: Redactor) -> None:
    """Scrub sys.stdout (when `redactor` knows a secret) and sys.stderr with `redactor`
    for the rest of the command, stderr by shape as well.

    Not undone when the command body returns: what is printed after it (the error of a
    command that ended on an exception, the `--json` failure object, a `--debug`
    traceback) leaves the process through the same streams. A test runner that swapped
    the streams in swaps its own back. A second call replaces the first one's redactor.
    """

    def stderr(text: str) -> str:
        return redact_text(redactor.scrub(text))

    _wrap("stdout", redactor.scrub if redactor else None)
    _wrap("stderr", stderr)


def _wrap(name: str, scrub: Callable[[str], str] | None) -> None:
    stream = getattr(sys, name)
    if isinstance(stream, _Scrubbed):
        stream = stream.wrapped
    setattr(sys, name, stream if scrub is None else _Scrubbed(stream, scrub))
