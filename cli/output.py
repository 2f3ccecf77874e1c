"""stdout: the answer as plain text, or the design's JSON object, or JSON Lines when
streaming. Written with plain writes: never rich markup, never re-wrapped, so it pipes."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from gateway.model import Result


def _stdout() -> TextIO:
    return sys.stdout


def write_text(text: str, out: TextIO | None = None) -> None:
    """The answer exactly as written, newline-terminated so a shell prompt never glues on."""
    out = out or _stdout()
    out.write(text if text.endswith("\n") else text + "\n")
    out.flush()


def write_json(result: Result, *, json_lines: bool = False, out: TextIO | None = None) -> None:
    obj = result.as_json()
    if json_lines:
        obj = {"type": "result", **obj}
    out = out or _stdout()
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


class StreamSink:
    """The engine's on_text for --stream: each delta straight to stdout, flushed at once.

    With `json_lines`, each delta is a `{"type": "delta", "text": ...}` line instead.
    """

    def __init__(self, *, json_lines: bool, out: TextIO | None = None) -> None:
        self._json_lines = json_lines
        self._out = out
        self.wrote = False
        self._last = ""

    def __call__(self, text: str) -> None:
        if not text:
            return
        out = self._out or _stdout()
        if self._json_lines:
            out.write(json.dumps({"type": "delta", "text": text}, ensure_ascii=False) + "\n")
        else:
            out.write(text)
        out.flush()
        self.wrote = True
        self._last = text

    def end_line(self) -> None:
        """Finish plain streamed text with a newline (also after a stream that broke)."""
        if self.wrote and not self._json_lines and not self._last.endswith("\n"):
            out = self._out or _stdout()
            out.write("\n")
            out.flush()
            self._last = "\n"
