"""The batch's output: one JSON object per line, each line whole.

Workers finish in any order, so every line is encoded first and then written under one
lock with a single write (looped only if the OS takes part of it), and flushed at once: a
reader tailing the file, or a run stopped at any moment, never sees half a line from a
stop that left the process alive. Once closed, late records are dropped rather than
written after the summary (an aborted run's stragglers); their questions are asked again
on `--resume`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import BinaryIO


class RecordWriter:
    """`scrub` rewrites each encoded line before it goes out (the run's redactor: no key
    value reaches the output, even one a provider echoed)."""

    def __init__(self, out: BinaryIO, *, scrub: Callable[[str], str] | None = None) -> None:
        self._out = out
        self._scrub = scrub
        self._lock = threading.Lock()
        self._closed = False
        self.written = 0

    def write(self, record: Mapping[str, object]) -> bool:
        """Write one record as one line; False when the writer is already closed."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        if self._scrub is not None:
            line = self._scrub(line)
        data = line.encode("utf-8")
        with self._lock:
            if self._closed:
                return False
            view = memoryview(data)
            while view:
                n = self._out.write(view)
                # A raw file may take part of it (a full disk frees up); a buffered one takes
                # all of it or raises.
                view = view[len(view) if n is None else n :]
            self._out.flush()
            self.written += 1
            return True

    def close(self) -> None:
        """No record is written after this returns (one being written finishes first)."""
        with self._lock:
            self._closed = True
