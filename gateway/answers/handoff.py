"""The reply that hands the question to a person, and what the customer reads instead.

The prompt asks a model to begin such a reply with `[handoff]` (`prompts.HANDOFF_MARKER`)
and a few words saying why, then the not-covered sentence. A reply that is that sentence
alone, without the marker, hands off too: it is the same outcome in the prompt's own
words, and posting it as an answer is what a script must be spared. The reason after the
marker is the handoff's detail (short: a script reads it, the customer never does).
"""

from __future__ import annotations

import re

from gateway.answers.phrases import Phrase, say
from gateway.config.model import AnswerSettings
from prompts import HANDOFF_MARKER, begins_not_covered, is_not_covered

_MARKED = re.compile(r"\A\s*" + re.escape(HANDOFF_MARKER) + r"[ \t:\-\u2013\u2014]*([^\n]*)", re.I)
_LONGEST_DETAIL = 200
_NO_REASON = "the model handed the question to a person"
_SENTENCE_ONLY = "the model replied with the prompt's not-covered sentence"


def handoff_detail(reply: str, product: str) -> str | None:
    """Why `reply` hands off (its reason, or what it said), or None for an answer."""
    marked = _MARKED.match(reply)
    if marked:
        reason = " ".join(marked.group(1).split())
        if len(reason) > _LONGEST_DETAIL:
            reason = reason[: _LONGEST_DETAIL - 1].rstrip() + "\u2026"
        return reason or _NO_REASON
    if is_not_covered(reply, product):
        return _SENTENCE_ONLY
    return None


def starts_handoff(text: str) -> bool:
    """Whether text that begins a reply already marks it as a handoff."""
    return _MARKED.match(text) is not None


def may_become_handoff(text: str, product: str) -> bool:
    """Whether the first words of a reply, `text`, may still turn out a handoff: they are
    the beginning of the marker or of the not-covered sentence."""
    start = text.lstrip().casefold()
    return HANDOFF_MARKER.startswith(start) or begins_not_covered(text, product)


def handoff_message(settings: AnswerSettings, product: str, language: str | None = None) -> str:
    """What the customer reads on a handoff, in their `language` (None: the default):
    `answers.handoff_message`, else the not-covered sentence (`phrases`)."""
    return say(Phrase.NOT_COVERED, language, settings, product=product)
