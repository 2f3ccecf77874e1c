"""The text a streaming customer sees, decided as `settle` decides the whole reply.

Each delta goes through three holds before it is shown:

1. The reply's first words wait until they can no longer become a handoff (the marker or
   the not-covered sentence): a handoff's text is never streamed as an answer, and a
   normal reply is held only for its first word or two.
2. A marker that may still be arriving (`[1` of `[12]`) waits for its bracket, so one cut
   across two deltas is checked whole (`citations.safe_end`).
3. With `answers.require_citation`, the text waits for its first valid citation: an answer
   that ends citing nothing is handed off, and none of it was shown.

What is shown, put together, is exactly the `answer` that `settle` makes of the whole reply.
"""

from __future__ import annotations

from enum import Enum

from gateway.answers.citations import Rewriter, safe_end
from gateway.answers.handoff import handoff_detail, may_become_handoff, starts_handoff


class _Gate(Enum):
    UNDECIDED = "undecided"
    ANSWER = "answer"
    HANDOFF = "handoff"


class AnswerStream:
    """One reply's deltas in, the customer's text out. `sent`: the passages the prompt
    holds; `keep_markers`: False removes every marker (`answers.citations: none`)."""

    def __init__(
        self, *, sent: int, product: str, keep_markers: bool = True, require_citation: bool = False
    ) -> None:
        self._sent = sent
        self._product = product
        self._keep = keep_markers
        self._require = require_citation
        self.restart()

    def sending(self, sent: int) -> None:
        """The attempt about to stream was sent `sent` passages (fewer, compacted for a
        smaller window): its markers are checked against those."""
        self._sent = sent
        self._rewriter.sent = sent

    def restart(self) -> None:
        """Forget the reply so far: another attempt streams from its beginning."""
        self._raw = ""
        self._gate = _Gate.UNDECIDED
        self._pending = ""  # released by the gate, not yet safe to check
        self._uncited = ""  # checked, waiting for a first citation (require_citation)
        self._rewriter = Rewriter(self._sent, keep=self._keep)

    @property
    def handed_off(self) -> bool:
        return self._gate is _Gate.HANDOFF

    def feed(self, delta: str) -> str:
        """The text to show now for `delta` (often "", while something is held)."""
        if self._gate is _Gate.HANDOFF:
            return ""
        if self._gate is _Gate.UNDECIDED:
            self._raw += delta
            if starts_handoff(self._raw):
                self._gate = _Gate.HANDOFF
                return ""
            if may_become_handoff(self._raw, self._product):
                return ""
            self._gate = _Gate.ANSWER
            delta, self._raw = self._raw, ""
        self._pending += delta
        cut = safe_end(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._release(self._rewriter.rewrite(ready))

    def finish(self) -> str:
        """What is left to show once the reply has ended ("" for a handoff)."""
        if self._gate is _Gate.UNDECIDED:
            if handoff_detail(self._raw, self._product) is not None:
                self._gate = _Gate.HANDOFF
                return ""
            self._gate = _Gate.ANSWER
            self._pending, self._raw = self._raw, ""
        if self._gate is _Gate.HANDOFF:
            return ""
        rest = self._release(self._rewriter.rewrite(self._pending))
        self._pending = ""
        return rest

    def _release(self, text: str) -> str:
        if self._require and not self._rewriter.cited:
            self._uncited += text
            return ""
        text, self._uncited = self._uncited + text, ""
        return text
