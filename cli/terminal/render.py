"""The attempts table on stderr: static (non-terminal, --show-attempts, simulate) or live.

The live display updates as the engine reports each attempt and counts a backoff wait
down while the engine sleeps. It is built only on a terminal, so rich.live is imported
only there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gateway.model import Attempt, Outcome, Result, Route, Status
from gateway.units import tenths

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.table import Table

    from cli.terminal.diag import Diag
    from gateway.config import Config

_DECISION_STYLE = {
    Outcome.ANSWERED: "green",
    Outcome.RETRY: "yellow",
    Outcome.FAIL_OVER: "magenta",
    Outcome.FATAL: "bold red",
    Outcome.SKIPPED: "dim",
    Outcome.STOPPED: "red",
    Outcome.INTERRUPTED: "red",
    Outcome.WAITED: "dim",
}


_HEADERS = ("deployment", "#", "status", "error class", "decision", "wait", "took")
_RIGHT = frozenset({"#", "status", "wait", "took"})


def _cells(a: Attempt, wait: str, keyed: frozenset[str] = frozenset()) -> tuple[str, ...]:
    return (
        f"{a.deployment} ({a.key})" if a.deployment in keyed and a.key else a.deployment,
        str(a.attempt) if a.attempt else "",
        "" if a.status is None else str(a.status),
        "" if a.error_class is None else str(a.error_class),
        str(a.outcome),
        wait,
        tenths(a.elapsed_s) if a.outcome.called else "",
    )


def attempts_table(
    attempts: Sequence[Attempt],
    *,
    countdown: float | None = None,
    title: str | None = None,
    width: int = 80,
) -> Table:
    """The table of attempts; `countdown` replaces the last row's wait while it is running."""
    from rich.table import Table
    from rich.text import Text

    last = len(attempts) - 1
    # A deployment that went through several of its keys says which key each call used.
    used_keys: dict[str, set[str]] = {}
    for a in attempts:
        if a.key:
            used_keys.setdefault(a.deployment, set()).add(a.key)
    keyed = frozenset(name for name, keys in used_keys.items() if len(keys) > 1)
    rows = []
    for i, a in enumerate(attempts):
        wait = tenths(a.wait_s)
        if countdown is not None and i == last:
            wait = f"{max(countdown, 0.0):.1f}s…"
        rows.append((a, _cells(a, wait, keyed)))

    table = Table(title=title, title_justify="left", title_style="bold", expand=False)
    used = 1  # the closing border
    for n, header in enumerate(_HEADERS):
        # The short columns never shrink: only the detail gives way to a narrow terminal.
        column = max([len(header), *(len(cells[n]) for _, cells in rows)])
        used += column + 3  # padding on both sides and a border
        table.add_column(
            header,
            justify="right" if header in _RIGHT else "left",
            no_wrap=True,
            min_width=column,
            max_width=column,
        )
    # One line per attempt, cut to what the width leaves: a provider's message can run to
    # paragraphs; --json and -v carry it whole.
    detail = max(8, width - used - 3)
    table.add_column("detail", no_wrap=True, overflow="ellipsis", max_width=detail)
    for a, cells in rows:
        styled = [Text(c) for c in cells]
        styled[4].stylize(_DECISION_STYLE.get(a.outcome, ""))
        table.add_row(*styled, Text(a.detail))
    return table


def print_attempts(console: Console, attempts: Sequence[Attempt], title: str | None = None) -> None:
    if not attempts:
        return
    if title:
        from rich.text import Text

        console.print(Text(title, style="bold"))
    console.print(attempts_table(attempts, width=console.width))


class LiveAttempts:
    """A live table on a terminal: a row per attempt, a countdown during waits, a spinner
    while a call is in flight. Leaves the final table on screen when stopped."""

    def __init__(self, console: Console, *, transient: bool = False) -> None:
        self._console = console
        self._transient = transient  # erased when stopped (the caller prints it again)
        self.attempts: list[Attempt] = []
        self._countdown_until: float | None = None
        self._started = time.monotonic()
        self._live: Live | None = None
        self._finished = False
        self._spinner: Spinner | None = None

    def __enter__(self) -> LiveAttempts:
        from rich.live import Live

        self._live = Live(
            self._render(),
            console=self._console,
            refresh_per_second=10,
            transient=self._transient,
            redirect_stdout=False,  # the answer goes to stdout untouched, never through rich
            redirect_stderr=False,
            get_renderable=self._render,
        )
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._countdown_until = None
        self._finished = True
        if self._live is not None:
            self._live.update(self._final(), refresh=True)
            self._live.__exit__(None, None, None)
            self._live = None

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        self._refresh()

    def sleep(self, seconds: float) -> None:
        """The engine's sleeper: really waits, counting down on the last row."""
        end = time.monotonic() + seconds
        self._countdown_until = end
        try:
            while (left := end - time.monotonic()) > 0:
                self._refresh()
                time.sleep(min(left, 0.1))
        finally:
            self._countdown_until = None
            self._refresh()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _final(self) -> RenderableType:
        from rich.text import Text

        if not self.attempts:
            return Text("")
        return attempts_table(self.attempts, width=self._console.width)

    def _render(self) -> RenderableType:
        if self._finished:
            return self._final()
        from rich.console import Group
        from rich.spinner import Spinner

        countdown = None
        if self._countdown_until is not None:
            countdown = self._countdown_until - time.monotonic()
        elapsed = time.monotonic() - self._started
        if countdown is not None and self.attempts:
            what = f"retrying {self.attempts[-1].deployment} in {max(countdown, 0):.1f}s"
        else:
            what = "asking"
        # One spinner for the whole run: a new one per refresh would restart at its first
        # frame and never turn.
        if self._spinner is None:
            self._spinner = Spinner("dots", style="cyan")
        spinner = self._spinner
        spinner.update(text=f"{what} · {elapsed:.1f}s so far")
        if not self.attempts:
            return spinner
        table = attempts_table(self.attempts, countdown=countdown, width=self._console.width)
        return Group(table, spinner)


class AttemptsDisplay:
    """Where attempts go while the engine works: a live table on a terminal, or a list to
    print at the end (non-terminal with --show-attempts), or nowhere (-q).

    `until_text` is for an answer streamed onto the same terminal: the live table runs
    while the engine waits, is erased the moment the answer's text starts (`text_starts`;
    the two would tear each other apart), and the final table is printed after it.
    """

    def __init__(
        self, diag: Diag, *, live: bool, show_final: bool, until_text: bool = False
    ) -> None:
        self.diag = diag
        self.attempts: list[Attempt] = []
        self._live: LiveAttempts | None = None
        self._want_live = live
        self._show_final = show_final
        self._until_text = until_text

    def __enter__(self) -> AttemptsDisplay:
        if self._want_live:
            self._live = LiveAttempts(self.diag.console(), transient=self._until_text)
            self._live.__enter__()
        return self

    def text_starts(self) -> None:
        """The answer's first text is about to reach the terminal: clear the table off it."""
        if self._live is not None and self._until_text:
            self._live.__exit__(None, None, None)
            self._live = None

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        if self._live is not None:
            self._live.add(attempt)

    def sleep(self, seconds: float) -> None:
        if self._live is not None:
            self._live.sleep(seconds)
        elif seconds > 0:
            time.sleep(seconds)

    def print_final(self, title: str | None = None) -> None:
        """The static table, when no live one was shown but one is wanted."""
        static = not self._want_live or self._until_text  # a transient live one is gone
        if self._show_final and static and self.attempts:
            print_attempts(self.diag.console(), self.attempts, title=title)


def _describe(provider: str | None, model: str | None) -> str:
    return " ".join(p for p in (provider, model) if p)


def _why(attempts: Sequence[Attempt], name: str) -> str:
    """Why a deployment did not serve: its last error class, or why it was skipped."""
    mine = [a for a in attempts if a.deployment == name]
    if not mine:
        return "not tried"
    last = mine[-1]
    if last.error_class is not None:
        return str(last.error_class)
    if last.outcome is Outcome.SKIPPED:
        return f"skipped ({last.detail})" if last.detail else "skipped"
    return str(last.outcome)


def fallback_notice(result: Result, config: Config) -> str | None:
    """The one line saying a fallback served, e.g. 'answered by fallback (anthropic
    claude-haiku-4-5) after 4 attempts; primary: rate_limit', naming every deployment
    passed over. None when the first
    deployment of the route served, or nothing did."""
    if result.status not in (Status.ANSWERED, Status.REFUSED) or result.deployment is None:
        return None
    served = result.deployment
    calls = result.served_attempts
    plural = "attempt" if calls == 1 else "attempts"
    what = _describe(result.provider, result.model)
    if result.routed is Route.LONG_CONTEXT:
        first = config.long_context.name if config.long_context else served
        if served == first:
            return (
                f"routed to the long-context deployment {served} ({what}): "
                f"the input ({result.input_tokens} tokens) is too large for the others"
            )
    else:
        first = config.deployments[0].name if config.deployments else served
    if served == first:
        return None
    # Every deployment passed over on the way, in the order they were tried.
    passed = dict.fromkeys(a.deployment for a in result.attempts if a.deployment != served)
    why = "; ".join(f"{name}: {_why(result.attempts, name)}" for name in passed)
    return f"answered by {served} ({what}) after {calls} {plural}; {why}"


AttemptSink = Callable[[Attempt], None]
