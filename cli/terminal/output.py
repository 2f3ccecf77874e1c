"""stdout: the answer as plain text, or the JSON object (docs/decisions.md#the-json-contract),
or JSON Lines when streaming. Written with plain writes: never rich markup, never
re-wrapped, so it pipes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from gateway.model import Request, Result

if TYPE_CHECKING:
    from rich.console import Console

    from gateway.answers.masking import StreamUnmasker
    from gateway.answers.stream import AnswerStream


def _stdout() -> TextIO:
    return sys.stdout


def write_text(text: str, out: TextIO | None = None) -> None:
    """The answer exactly as written, newline-terminated so a shell prompt never glues on."""
    out = out or _stdout()
    out.write(text if text.endswith("\n") else text + "\n")
    out.flush()


def json_object(
    result: Result, error_extra: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The object `--json` prints for a question (`batch` writes it after the id)."""
    obj = result.as_json()
    error = obj.get("error")
    if error_extra and isinstance(error, dict):
        error.update(error_extra)
    return obj


def write_json(
    result: Result,
    *,
    json_lines: bool = False,
    out: TextIO | None = None,
    error_extra: Mapping[str, object] | None = None,
) -> None:
    """The --json object; `error_extra` adds what the CLI knows about a failure (the
    seconds to wait before retrying)."""
    obj = json_object(result, error_extra)
    if json_lines:
        obj = {"type": "result", **obj}
    out = out or _stdout()
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def stdout_console() -> Console:
    """A rich console on stdout, for commands whose result is a table (stats, eval,
    cooldowns). A reader that goes away surfaces as BrokenPipeError, which the command
    guard turns into exit 141 as for `ask`; rich's own handling would exit 1, "a bug"."""
    from rich.console import Console

    class StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    # Rich itself honours NO_COLOR and drops colour and cursor tricks off a terminal.
    return StdoutConsole(file=sys.stdout, highlight=False, soft_wrap=False)


class StreamSink:
    """The engine's on_text for --stream: each delta straight to stdout, flushed at once.

    With `json_lines`, each delta is a `{"type": "delta", "text": ...}` line instead.
    `unmasker` puts the customer's masked values back into the text as it streams.
    """

    def __init__(
        self,
        *,
        json_lines: bool,
        out: TextIO | None = None,
        before_first: Callable[[], None] | None = None,
        unmasker: StreamUnmasker | None = None,
    ) -> None:
        self._unmasker = unmasker
        self._json_lines = json_lines
        self._out = out
        self._before_first = before_first  # e.g. clear a live table off the same terminal
        self.wrote = False
        self._last = ""

    def __call__(self, text: str) -> None:
        if self._unmasker is not None:
            text = self._unmasker.feed(text)
        self._write(text)

    def _write(self, text: str) -> None:
        if not text:
            return
        if self._before_first is not None:
            before, self._before_first = self._before_first, None
            before()
        out = self._out or _stdout()
        if self._json_lines:
            out.write(json.dumps({"type": "delta", "text": text}, ensure_ascii=False) + "\n")
        else:
            out.write(text)
        out.flush()
        self.wrote = True
        self._last = text

    def restart(self, deployment: str, reason: str) -> None:
        """Tell the consumer to drop the text shown since the last restart: the next
        deltas are another attempt's answer, from its beginning (`--allow-restart`)."""
        out = self._out or _stdout()
        event = {"type": "restart", "deployment": deployment, "reason": reason}
        out.write(json.dumps(event, ensure_ascii=False) + "\n")
        out.flush()

    def end_line(self) -> None:
        """Finish plain streamed text with a newline (also after a stream that broke)."""
        if self._unmasker is not None:
            self._write(self._unmasker.flush())
        if self.wrote and not self._json_lines and not self._last.endswith("\n"):
            out = self._out or _stdout()
            out.write("\n")
            out.flush()
            self._last = "\n"


class AnswerSink:
    """The engine's on_text for --stream once answers are settled: each delta through the
    reply's `AnswerStream` (a handoff held back, citations checked as they come), what it
    lets through to the `StreamSink`."""

    def __init__(self, stream: AnswerStream, sink: StreamSink) -> None:
        self._stream = stream
        self._sink = sink

    def __call__(self, text: str) -> None:
        self._sink(self._stream.feed(text))

    def sending(self, request: Request) -> None:
        """The engine's on_send: the request the next attempt streams the answer to."""
        self._stream.sending(len(request.sources))

    def restart(self, deployment: str, reason: str) -> None:
        self._stream.restart()
        self._sink.restart(deployment, reason)

    def finish(self) -> None:
        """The end of the reply: whatever was held back and may be shown."""
        self._sink(self._stream.finish())
