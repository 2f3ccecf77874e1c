"""Diagnostics on stderr: errors, warnings and notices, and the rich console for tables.

Plain lines are written straight to stderr unless colour is wanted (a terminal and no
NO_COLOR), so the common non-interactive path never imports rich.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


OFF_TERMINAL_WIDTH = 120


def is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or odd stream is not a terminal
        return False


class Diag:
    """Everything support-ask says on stderr goes through one of these.

    `quiet` silences all but errors. The stream is looked up when a line is written, not
    when the object is made, so a test runner that swaps sys.stderr still sees it.
    """

    def __init__(
        self,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.quiet = quiet
        self._stream = stream
        env = os.environ if environ is None else environ
        self.no_color = bool(env.get("NO_COLOR"))
        self._console: Console | None = None

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def is_tty(self) -> bool:
        return is_tty(self.stream)

    @property
    def color(self) -> bool:
        return self.is_tty and not self.no_color

    @property
    def animate(self) -> bool:
        """Live displays only on a terminal that accepts colour and cursor movement."""
        return self.color and not self.quiet

    def console(self) -> Console:
        """The rich console on stderr: only for tables, never for answer text."""
        if self._console is None:
            from rich.console import Console

            # Off a terminal nothing wraps lines, so a table may be wider than the 80
            # columns rich assumes there (unless $COLUMNS says otherwise).
            width = None if self.is_tty or os.environ.get("COLUMNS") else OFF_TERMINAL_WIDTH
            self._console = Console(
                file=self.stream,
                no_color=not self.color,
                force_terminal=self.color or None,
                highlight=False,
                soft_wrap=False,
                width=width,
            )
        return self._console

    def _line(self, text: str, style: str) -> None:
        if self.color:
            from rich.text import Text

            self.console().print(Text(text, style=style), soft_wrap=True)
        else:
            stream = self.stream
            stream.write(text + "\n")
            stream.flush()

    def error(self, message: str, fix: str | None = None) -> None:
        self._line(f"error: {message}", "bold red")
        if fix:
            self._line(f"  fix: {fix}", "red")

    def warn(self, message: str) -> None:
        if not self.quiet:
            self._line(f"warning: {message}", "yellow")

    def notice(self, message: str) -> None:
        if not self.quiet:
            self._line(message, "cyan")

    def detail(self, message: str) -> None:
        """A continuation line of an error (e.g. one deployment's last error): never quiet."""
        self._line(message, "")
