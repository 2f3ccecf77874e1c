"""What the user sees while an article index is built: a rich progress bar on a terminal
(files and MB, the current file), else one summary line when it is done.

The gateway reports progress through a plain callback (`gateway.knowledge.store.RefreshProgress`);
rich is only ever imported here, and only once there is something to show.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.knowledge.store import RefreshProgress

MB = 1_000_000


class IndexProgress:
    """The progress callback for one build. `summary`: say one line when done (off a
    terminal, or with the bar); `silent`: nothing at all (`ask -q`)."""

    def __init__(self, diag: Diag, *, summary: bool = True, silent: bool = False) -> None:
        self.diag = diag
        self.summary = summary
        self.silent = silent
        self.bar = diag.animate and not silent
        self._progress: Any = None
        self._task: Any = None
        self._started = time.monotonic()
        self.last: RefreshProgress | None = None

    def __call__(self, event: RefreshProgress) -> None:
        self.last = event
        if not self.bar or event.files == 0:
            return
        if self._progress is None:
            self._start(event)
        name = os.path.basename(event.current) or "done"
        self._progress.update(
            self._task,
            completed=event.bytes_done / MB,
            files=f"{event.files_done:,}/{event.files:,} files",
            current=name,
        )

    def _start(self, event: RefreshProgress) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("indexing articles"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[files]}"),
            TextColumn("{task.completed:,.1f}/{task.total:,.1f} MB"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[current]}", style="dim"),
            console=self.diag.console(),
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "index", total=max(event.bytes / MB, 1e-6), files="", current=""
        )

    def __enter__(self) -> IndexProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
        if kind is None and not self.silent and self.summary and self.last is not None:
            self.diag.notice(self.line())

    def line(self) -> str:
        last = self.last
        assert last is not None
        took = time.monotonic() - self._started
        return f"indexed {last.files:,} article files ({last.bytes / MB:,.1f} MB) in {took:.1f} s"
