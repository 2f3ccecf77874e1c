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
    from gateway.observe.grounding import Asked, AskedTotals
    from gateway.observe.retrieval import Judged, Totals


class JudgeProgress:
    """A bar on stderr's terminal, one step a question; off a terminal or with -q, none."""

    def __init__(self, diag: Diag, *, total: int, what: str = "judging") -> None:
        self.bar = diag.animate and not diag.quiet
        self.diag = diag
        self.total = total
        self.what = what
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> JudgeProgress:
        if self.bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn(f"{self.what} questions"),
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


def asked_line(at: AskedTotals) -> str:
    """The deployments' answers over the set, in one line."""
    handoffs = ", ".join(f"{reason} {n}" for reason, n in at.handoffs) or "none"
    return (
        f"asked: {at.answered} answered, handoffs {handoffs}, {at.unanswered} unanswered; "
        f"handoff recall {_share(at.handoff_recall)} ({at.handed_off}/{at.unanswerable}), "
        f"false handoffs {_share(at.false_handoff_rate)} ({at.false_handoffs}/{at.answerable}), "
        f"cited an answering article {_share(at.cited_rate)} "
        f"({at.cites_answering}/{at.answered_answerable}), "
        f"answers with a dropped citation {at.dropped_answers}"
    )


def _asked_cell(one: Asked) -> Any:
    from rich.text import Text

    if one.action is None:
        return Text("no answer", style="red")
    if one.reason is not None:
        good = not one.question.answerable
        return Text(f"handoff ({one.reason})", style="green" if good else "red")
    said = "answer" + ("" if one.cites_answering is None else (
        ", cites it" if one.cites_answering else ", cites other articles"))  # fmt: skip
    if one.dropped:
        said += f", {one.dropped} dropped"
    good = bool(one.cites_answering) and not one.dropped
    return Text(said, style="green" if good else "red")


def print_report(
    judged: Sequence[Judged],
    at: Totals,
    swept: Sequence[Totals],
    asked: Sequence[Asked] | None = None,
    asked_at: AskedTotals | None = None,
) -> None:
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    title = "golden set, offline" if asked is None else "golden set, deployments asked"
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("line", justify="right", no_wrap=True)
    table.add_column("question", ratio=3, overflow="fold")
    table.add_column("relevance", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("article in the prompt", ratio=2, overflow="fold")
    if asked is not None:
        table.add_column("asked", ratio=2, overflow="fold")
    for i, one in enumerate(judged):
        outcome = one.outcome(at.floor)
        found = one.found or ("" if not one.question.answerable else "none of " + ", ".join(
            one.question.articles))  # fmt: skip
        cells: list[Any] = [
            str(one.question.line),
            Text(one.question.text),
            f"{one.relevance.score:.2f}",
            Text(outcome.replace("_", " "), style="green" if outcome.good else "red"),
            Text(found, style="" if one.found else "dim"),
        ]
        if asked is not None:
            cells.append(_asked_cell(asked[i]))
        table.add_row(*cells)
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
    if asked_at is not None:
        console.print(Text(f"eval --golden: {asked_line(asked_at)}"))
