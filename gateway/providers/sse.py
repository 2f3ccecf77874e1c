"""Server-sent events: the frames, their incremental decoder, and the parser protocol
each adapter implements to read its provider's stream."""

from __future__ import annotations

import codecs
import re
from typing import Protocol

from gateway.model import Reply
from gateway.record import record


@record
class SseEvent:
    event: str  # "message" when the frame names none (OpenAI, Gemini)
    data: str  # the frame's data lines joined with "\n"


_NEWLINE = re.compile(r"\r\n|\r|\n")


class SseDecoder:
    """Decodes an event stream incrementally, as the WHATWG spec interprets one.

    Lines end in CRLF, LF or CR (Gemini sends CRLF; a CRLF may be split across two chunks);
    lines starting with ':' are comments (OpenRouter's ': OPENROUTER PROCESSING'); several
    `data:` lines make one event joined by newlines; a blank line dispatches. An event left
    without its blank line at EOF is discarded, as the spec says.

    Linear in the stream's size, however it is chunked: a line still growing is kept as its
    pieces, joined once when its line ending arrives, and only new text is scanned for line
    endings (re-scanning the whole unfinished line at every chunk made a 2 MiB event in
    4 KiB chunks cost seconds).
    """

    __slots__ = ("_data", "_event", "_pending", "_skip_lf", "_started", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # the unfinished line's pieces, in order
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        text = self._text.decode(chunk)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if "\n" not in text and "\r" not in text:
            self._pending.append(text)  # the line goes on: nothing to scan again later
            return []
        lines = _NEWLINE.split(text)
        if self._pending:
            lines[0] = "".join(self._pending) + lines[0]
            self._pending.clear()
        tail = lines.pop()
        if tail:
            self._pending.append(tail)
        self._skip_lf = text.endswith("\r")
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(SseEvent(self._event or "message", "\n".join(self._data)))
                self._event = ""
                self._data = []
            elif line[0] != ":":
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    self._data.append(value)
                elif name == "event":
                    self._event = value
                # `id` and `retry` steer reconnection, which a one-shot answer never does
        return events


class StreamParser(Protocol):
    """One provider's reading of its event stream, driven by `HttpClient.stream_reply`."""

    @property
    def finished(self) -> bool:
        """The stream's own end marker arrived: stop reading."""
        ...

    def feed(self, event: SseEvent) -> str:
        """The text delta this event carries for the user ('' if none).

        Raises ProviderError for an error event or a frame that is not valid JSON.
        """
        ...

    def reply(self, text: str) -> Reply:
        """The answer once the stream is over; raises ProviderError if it ended unfinished."""
        ...

    def refused_so_far(self, text: str) -> Reply | None:
        """The refusal the stream has already signalled (a refusal delta, a refusal stop or
        finish reason, a blocked prompt), as the answer, or None.

        A stream cut after that signal is still a refusal: the model had declined, and
        retrying or failing over would only ask another model the same question.
        """
        ...
