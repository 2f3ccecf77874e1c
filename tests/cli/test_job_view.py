"""How `batch --status` shows a provider batch job: a bar of the provider's own counts on a
terminal, one plain line a look anywhere else, nothing with -q."""

from __future__ import annotations

import io

from cli.terminal.diag import Diag
from cli.terminal.job_view import JobView
from gateway.providers.batchapi import BatchState, Counts, Snapshot


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


LOOKS = [
    Snapshot("batch_b1", BatchState.RUNNING, "in_progress", Counts(3, 1, 0)),
    Snapshot("batch_b1", BatchState.ENDED, "completed", Counts(3, 2, 1)),
]


def test_off_a_terminal_each_look_is_one_plain_line_with_the_counts() -> None:
    stream = io.StringIO()
    with JobView(Diag(stream=stream, environ={})) as view:
        for snap in LOOKS:
            view.show(snap)
    assert stream.getvalue().splitlines() == [
        "batch batch_b1: in_progress, 1/3 done (1 succeeded, 0 failed)",
        "batch batch_b1: completed, 3/3 done (2 succeeded, 1 failed)",
    ]


def test_on_a_terminal_a_bar_shows_the_providers_counts() -> None:
    stream = Tty()
    with JobView(Diag(stream=stream, environ={})) as view:
        view.show(LOOKS[0])
        view.show(LOOKS[1])
    drawn = stream.getvalue()
    assert "batch batch_b1 completed" in drawn and "3/3" in drawn
    assert "━" in drawn  # the bar itself


def test_quiet_shows_nothing() -> None:
    stream = io.StringIO()
    with JobView(Diag(stream=stream, quiet=True, environ={})) as view:
        view.show(LOOKS[0])
    assert stream.getvalue() == ""
