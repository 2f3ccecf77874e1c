"""How `batch --status` shows a provider batch job while it runs: on a terminal that takes
colour, a bar of the provider's own counts redrawn at each look; anywhere else (cron, a
log, -q), one plain line a look."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from cli.terminal.diag import Diag
    from gateway.providers.batchapi import Snapshot


def job_line(snap: Snapshot) -> str:
    c = snap.counts
    line = f"batch {snap.id}: {snap.status}, {c.done}/{c.total} done"
    line += f" ({c.succeeded} succeeded, {c.failed} failed)"
    return line + (f": {snap.detail}" if snap.detail else "")


class JobView:
    def __init__(self, diag: Diag) -> None:
        self._diag = diag
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> JobView:
        if self._diag.animate:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=self._diag.console(),
                transient=True,
            )
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def show(self, snap: Snapshot) -> None:
        if self._bar is None:
            self._diag.notice(job_line(snap))
            return
        what = f"batch {snap.id} {snap.status}"
        if self._task is None:
            self._task = self._bar.add_task(what, total=snap.counts.total or None)
        self._bar.update(
            self._task,
            description=what,
            completed=snap.counts.done,
            total=snap.counts.total or None,
        )
