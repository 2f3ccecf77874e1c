"""How a batch shows its progress on stderr.

On a terminal that takes colour (and not -q): a live line redrawn a few times a second,
a bar, done of total, answered / handed off / refused / failed, questions per second, the ETA, the
fallback share, and what the limiter is doing. Anywhere else (a log file, cron, -q,
NO_COLOR): one plain line every `every` seconds. A summary at the end in both cases.
Only this module draws; the runner hands it frozen `Progress` snapshots.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gateway.units import countdown

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

    from cli.terminal.diag import Diag
    from gateway.batch import Progress


def _share(p: Progress) -> str:
    share = p.fallback_share
    return "-" if share is None else f"{share:.0%}"


def _of(p: Progress) -> str:
    return f"{p.done}/{p.total}" if p.total is not None else f"{p.done}"


def _limits(p: Progress) -> str:
    """What the limiter is doing, when it is doing anything."""
    parts = []
    lim = p.limiter
    if lim.signals:
        parts.append(f"slowed to {lim.limit} in flight after {lim.signals} rate limits")
    if lim.paused_for > 0:
        parts.append(f"paused {lim.paused_for:.1f}s for the server's wait")
    if p.stopping:
        parts.append(
            f"stopping: {lim.in_flight} in flight finishing (interrupt again to stop at once)"
        )
    return "; ".join(parts)


def status_line(p: Progress) -> str:
    """One plain line: what a log file or cron mail shows every few seconds."""
    eta = p.eta_s
    line = (
        f"batch: {_of(p)} done: {p.answered} answered, {p.handoff} handed off, "
        f"{p.refused} refused, {p.failed} failed, {p.invalid} bad lines"
    )
    if p.skipped:
        line += f", {p.skipped} already answered"
    line += f"; {p.rate:.1f} q/s"
    if eta is not None:
        line += f", ETA {countdown(eta)}"
    line += f"; fallback {_share(p)}"
    limits = _limits(p)
    return f"{line}; {limits}" if limits else line


def summary_line(p: Progress, *, stopped: str | None, out: str, resumable: bool = True) -> str:
    """The line that ends every batch; `resumable`: its results went to a file --resume can
    read back (not stdout)."""
    what = "stopped" if stopped else "done"
    line = (
        f"batch {what}: {p.asked} asked in {p.elapsed_s:.1f}s ({p.rate:.1f} q/s): "
        f"{p.answered} answered, {p.handoff} handed off, {p.refused} refused, "
        f"{p.failed} failed, {p.invalid} bad lines, {p.skipped} already answered; "
        f"fallback {_share(p)}"
    )
    if p.limiter.signals:
        line += (
            f"; slowed down after {p.limiter.signals} rate limits "
            f"(lowest {p.limiter.lowest} in flight)"
        )
    line += f"; results in {out}"
    if stopped:
        left = "" if p.total is None else f" ({max(0, p.total - p.done)} left)"
        if resumable:
            line += f"; {stopped}: run again with --resume to finish{left}"
        else:  # --resume reads the ids answered back from the file: stdout cannot be read
            line += (
                f"; {stopped}{left}: results on stdout cannot be resumed; run again with "
                "--out FILE, then --out FILE --resume after any stop"
            )
    return line


class LineReport:
    """A plain line every `every` seconds, when something changed."""

    def __init__(self, diag: Diag, every: float) -> None:
        self._diag = diag
        self._every = every
        self._next = time.monotonic() + every
        self._said_stopping = False
        self._last: tuple[int, int] | None = None

    def __enter__(self) -> LineReport:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def tick(self, p: Progress) -> None:
        if p.stopping and not self._said_stopping:
            self._said_stopping = True
            self._diag.detail(stopping_notice(p))
        now = time.monotonic()
        if self._every <= 0 or now < self._next:
            return
        self._next = now + self._every
        if self._last != (p.done, p.limiter.in_flight):
            self._last = (p.done, p.limiter.in_flight)
            self._diag.detail(status_line(p))


def stopping_notice(p: Progress) -> str:
    return (
        f"stopping: no new questions; {p.limiter.in_flight} in flight finish within "
        "their budget (interrupt again to stop at once)"
    )


class LiveBar:
    """The bar on a terminal, redrawn by rich's own refresh thread from the latest snapshot."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._latest: Progress | None = None
        self._live: Live | None = None
        self._spinner: RenderableType | None = None
        self._finished = False

    def __enter__(self) -> LiveBar:
        from rich.live import Live

        self._live = Live(
            console=self._console,
            refresh_per_second=8,
            transient=False,
            redirect_stdout=False,  # records go to stdout untouched
            redirect_stderr=False,
            get_renderable=self._render,
        )
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finished = True  # the last frame stays on screen, without the spinner
        if self._live is not None:
            self._live.refresh()
            self._live.__exit__(None, None, None)
            self._live = None

    def tick(self, p: Progress) -> None:
        self._latest = p

    def _render(self) -> RenderableType:
        from rich.progress_bar import ProgressBar
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        p = self._latest
        if p is None:
            return Text("starting…", style="dim")
        if self._spinner is None:
            self._spinner = Spinner("dots", style="cyan")
        grid = Table.grid(padding=(0, 1))
        for _ in range(4):
            grid.add_column(no_wrap=True)
        counts = Text.assemble(
            (f"{p.answered} answered", "green"),
            " · ",
            (f"{p.handoff} handed off", "cyan"),
            " · ",
            (f"{p.refused} refused", "yellow"),
            " · ",
            (f"{p.failed} failed", "red" if p.failed else ""),
        )
        if p.invalid:
            counts.append(f" · {p.invalid} bad lines", style="red")
        eta = p.eta_s
        pace = f"{p.rate:.1f} q/s" + ("" if eta is None else f" · ETA {countdown(eta)}")
        pace += f" · fallback {_share(p)}"
        bar = ProgressBar(total=p.total, completed=p.done, width=30)
        head = Text("✓", style="green") if self._finished else self._spinner
        grid.add_row(head, bar, Text(_of(p), style="bold"), counts)
        rows: list[RenderableType] = [grid, Text(pace, style="dim")]
        limits = _limits(p)
        if limits:
            rows.append(Text(limits, style="yellow"))
        from rich.console import Group

        return Group(*rows)
