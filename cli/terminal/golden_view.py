"""What `eval --golden` shows: a progress bar on a terminal while the questions are judged
(nothing elsewhere), then a table of the questions, the totals at the floor, and with
`--sweep` what each floor would do."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cli.terminal.output import stdout_console

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.observe.retrieval import Judged, Totals


class JudgeProgress:
    """A bar on stderr's terminal, one step a question; off a terminal or with -q, none."""

    def __init__(self, diag: Diag, *, total: int) -> None:
        self.bar = diag.animate and not diag.quiet
        self.diag = diag
        self.total = total
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> JudgeProgress:
        if self.bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("judging questions"),
                BarColumn(),
                MofNCompleteColumn(),
                console=self.diag.console(),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("judge", total=self.total)
        return self

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def totals_line(at: Totals) -> str:
    return (
        f"floor {at.floor:g}: recall {_share(at.recall)} ({at.found}/{at.answerable}), "
        f"handoff recall {_share(at.handoff_recall)} ({at.handed_off}/{at.unanswerable}), "
        f"false handoffs {_share(at.false_handoff_rate)} ({at.false_handoffs}/{at.answerable})"
    )


def print_report(judged: Sequence[Judged], at: Totals, swept: Sequence[Totals]) -> None:
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    table = Table(title="golden set, offline", title_justify="left", expand=True)
    table.add_column("line", justify="right", no_wrap=True)
    table.add_column("question", ratio=3, overflow="fold")
    table.add_column("relevance", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("article in the prompt", ratio=2, overflow="fold")
    for one in judged:
        outcome = one.outcome(at.floor)
        found = one.found or ("" if not one.question.answerable else "none of " + ", ".join(
            one.question.articles))  # fmt: skip
        table.add_row(
            str(one.question.line),
            Text(one.question.text),
            f"{one.relevance.score:.2f}",
            Text(outcome.replace("_", " "), style="green" if outcome.good else "red"),
            Text(found, style="" if one.found else "dim"),
        )
    console.print(table)
    if swept:
        sweep = Table(title="what each floor would do", title_justify="left")
        for name in ("floor", "recall", "handoff recall", "false handoffs"):
            sweep.add_column(name, justify="right")
        for row in swept:
            mark = "bold" if row.floor == at.floor else ""
            sweep.add_row(
                f"{row.floor:g}" + (" (set)" if row.floor == at.floor else ""),
                _share(row.recall),
                _share(row.handoff_recall),
                _share(row.false_handoff_rate),
                style=mark,
            )
        console.print(sweep)
    console.print(Text(f"eval --golden: {totals_line(at)}"))
