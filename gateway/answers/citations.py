"""The citation markers of an answer: `[1]`, `[2]`, ... for the passages the prompt held,
numbered from 1 in the order sent (`prompts.marker`).

A marker is kept only for a passage that was sent. One naming no passage sent is removed
with the blank before it and counted as dropped; a group (`[1, 7]`) keeps the numbers
that were sent. The same `Rewriter` serves a whole answer and a stream cut anywhere
(`safe_end` holds back a marker that may still be arriving), so a streamed answer reads
exactly as the whole one.
"""

from __future__ import annotations

import re

from gateway.record import record

# One marker: one number, or up to eight comma-separated. Bounded, so that a stream knows
# when an open bracket can no longer become one (`_TAIL`: 64 characters are more).
_ONE = r"\[\d{1,4}(?:[ \t]?,[ \t]?\d{1,4}){0,7}\]"
# A run of markers ("[1][2]", "[1] [2]") with the blanks before it: checked together, so
# that removing one never glues its neighbour to the word before.
_RUN = re.compile(rf"[ \t]*{_ONE}(?:[ \t]?{_ONE})*")
_MARKER = re.compile(r"([ \t]?)\[(\d[\d, \t]*)\]")
# What may still become part of a run at the end of a stream's text so far.
_TAIL = re.compile(rf"(?:[ \t]?{_ONE})*(?:[ \t]?\[[\d, \t]{{0,62}})?[ \t]*\Z")


@record
class Checked:
    """An answer's text with its markers checked: `cited` the passage numbers in the
    order first cited; `dropped` the markers' numbers that named no passage sent."""

    text: str
    cited: tuple[int, ...]
    dropped: int


class Rewriter:
    """Checks markers against the `sent` passages, across as many pieces as the text comes
    in; with `keep=False` every marker is removed (the channel shows sources itself),
    though the valid ones are still counted as cited."""

    def __init__(self, sent: int, *, keep: bool = True) -> None:
        self.sent = sent
        self.keep = keep
        self.cited: list[int] = []
        self.dropped = 0

    def rewrite(self, text: str) -> str:
        """`text` with its markers checked. A run of markers must not be cut across two
        calls: cut only at `safe_end`."""
        return _RUN.sub(self._run, text)

    def _run(self, run: re.Match[str]) -> str:
        text = run.group(0)
        blank = text[: len(text) - len(text.lstrip(" \t"))]
        kept = [self._marker(m) for m in _MARKER.finditer(text, len(blank))]
        shown = "".join(k for k in kept if k)
        if not shown or not self.keep:
            return ""
        # The run's own blank before its first marker kept, whichever that is now.
        return blank + shown.lstrip(" \t")

    def _marker(self, match: re.Match[str]) -> str:
        numbers = [int(n) for n in match.group(2).split(",")]
        valid = [n for n in numbers if 1 <= n <= self.sent]
        self.dropped += len(numbers) - len(valid)
        for n in valid:
            if n not in self.cited:
                self.cited.append(n)
        if not valid:
            return ""
        if len(valid) == len(numbers):
            return match.group(0)
        return f"{match.group(1)}[{', '.join(str(n) for n in valid)}]"

    def checked(self, text: str) -> Checked:
        return Checked(text, tuple(self.cited), self.dropped)


def check(text: str, sent: int, *, keep: bool = True) -> Checked:
    """A whole answer's markers checked against `sent` passages."""
    rewriter = Rewriter(sent, keep=keep)
    return rewriter.checked(rewriter.rewrite(text))


def safe_end(text: str) -> int:
    """How much of `text` can be rewritten now: all but a run of markers that may go on
    (a marker still arriving, or the next of a run) and the blanks before it, which go
    with it if it names no passage."""
    tail = _TAIL.search(text, max(0, text.rfind("\n")))
    end = len(text) if tail is None else tail.start()
    while end and text[end - 1] in " \t":
        end -= 1
    return end
