"""Retrieval and the relevance floor measured on a golden set, with no deployment asked.

Each question gets the selection `ask` makes (`gateway.knowledge.select.select` within the
budget) and its relevance (`gateway.knowledge.relevance`). Over the questions, at a floor:

- recall: the share of answerable questions that are not handed off and whose prompt
  holds a passage of an answering article (a false handoff is a miss: the customer gets
  no answer);
- handoff recall: the share of unanswerable questions handed off;
- false handoffs: the share of answerable questions handed off.

The floor changes none of the selections, so one pass of `judge` gives every floor of a
sweep. Pure: the index is passed in, the questions already read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from gateway.knowledge.index import Index
from gateway.knowledge.relevance import Relevance, relevance
from gateway.knowledge.select import select
from gateway.observe.golden import GoldenQuestion
from gateway.record import record

SWEEP = tuple(step / 20 for step in range(21))  # 0, 0.05, ..., 1


def matches(path: str, article: str) -> bool:
    """Whether a passage's article `path` is the golden file's `article`: the same path,
    or `article` is a trailing part of it (whole folder names)."""
    path = path.replace("\\", "/")
    return path == article or path.endswith("/" + article)


class Outcome(StrEnum):
    """What one question came to at a floor."""

    FOUND = "found"  # answerable, not handed off, an answering article in the prompt
    MISSED = "missed"  # answerable, not handed off, no answering article in the prompt
    FALSE_HANDOFF = "false_handoff"  # answerable, handed off
    HANDED_OFF = "handed_off"  # unanswerable, handed off
    NOT_HANDED_OFF = "not_handed_off"  # unanswerable, sent on to the models

    @property
    def good(self) -> bool:
        return self in (Outcome.FOUND, Outcome.HANDED_OFF)


@record
class Judged:
    """One question's selection and relevance. `found`: the answering article the prompt
    holds (its path as the help centre lists it), None when it holds none."""

    question: GoldenQuestion
    relevance: Relevance
    sent: tuple[str, ...]  # the articles in the prompt, best first, each once
    found: str | None

    def handed_off(self, floor: float) -> bool:
        return not self.relevance.covers(floor)

    def outcome(self, floor: float) -> Outcome:
        off = self.handed_off(floor)
        if not self.question.answerable:
            return Outcome.HANDED_OFF if off else Outcome.NOT_HANDED_OFF
        if off:
            return Outcome.FALSE_HANDOFF
        return Outcome.FOUND if self.found is not None else Outcome.MISSED

    def as_json(self, floor: float) -> dict[str, object]:
        return {
            "question": self.question.text,
            "line": self.question.line,
            "answerable": self.question.answerable,
            "articles": list(self.question.articles),
            "relevance": round(self.relevance.score, 3),
            "handoff": self.handed_off(floor),
            "outcome": str(self.outcome(floor)),
            "in_prompt": self.found is not None if self.question.answerable else None,
            "found": self.found,
            "sent": list(self.sent),
        }


def judge(question: GoldenQuestion, index: Index, budget: int | None) -> Judged:
    selection = select(question.text, index, budget)
    sent = tuple(dict.fromkeys(s.path for s in selection.sources))
    found = next((p for p in sent if any(matches(p, a) for a in question.articles)), None)
    return Judged(question, relevance(question.text, selection.sources, index), sent, found)


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def rounded(value: float | None) -> float | None:
    """A share as the JSON reports it."""
    return None if value is None else round(value, 4)


class HandoffShares:
    """What handoff recall and the false-handoff rate mean, for every total that counts them
    (retrieval's here, and the asked answers' in gateway.observe.grounding)."""

    answerable: int
    unanswerable: int
    handed_off: int  # unanswerable, handed off
    false_handoffs: int  # answerable, handed off

    @property
    def handoff_recall(self) -> float | None:
        return share(self.handed_off, self.unanswerable)

    @property
    def false_handoff_rate(self) -> float | None:
        return share(self.false_handoffs, self.answerable)


@record
class Totals(HandoffShares):
    """The figures at one floor. A share is None when it has no question to count."""

    floor: float
    answerable: int
    unanswerable: int
    found: int  # answerable, not handed off, an answering article in the prompt
    handed_off: int  # unanswerable, handed off
    false_handoffs: int  # answerable, handed off

    @property
    def recall(self) -> float | None:
        return share(self.found, self.answerable)

    def as_json(self) -> dict[str, object]:
        return {
            "floor": self.floor,
            "answerable": self.answerable,
            "unanswerable": self.unanswerable,
            "recall": rounded(self.recall),
            "handoff_recall": rounded(self.handoff_recall),
            "false_handoffs": rounded(self.false_handoff_rate),
            "found": self.found,
            "handed_off": self.handed_off,
            "false_handoff_count": self.false_handoffs,
        }


def totals(judged: Sequence[Judged], floor: float) -> Totals:
    answerable = [j for j in judged if j.question.answerable]
    unanswerable = [j for j in judged if not j.question.answerable]
    return Totals(
        floor=floor,
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        found=sum(1 for j in answerable if j.outcome(floor) is Outcome.FOUND),
        handed_off=sum(1 for j in unanswerable if j.handed_off(floor)),
        false_handoffs=sum(1 for j in answerable if j.handed_off(floor)),
    )


def sweep(judged: Sequence[Judged], also: Iterable[float] = ()) -> tuple[Totals, ...]:
    """The totals at each floor of `SWEEP` and of `also` (e.g. the configured one)."""
    return tuple(totals(judged, floor) for floor in sorted({*SWEEP, *also}))


@record
class Thresholds:
    """What CI requires, as shares (None: not checked)."""

    min_recall: float | None = None
    min_handoff_recall: float | None = None
    max_false_handoffs: float | None = None


def failures(found: Totals, required: Thresholds) -> tuple[str, ...]:
    """Each threshold `found` misses, as a sentence; a share with nothing to count (no
    unanswerable question, say) misses the threshold on it."""
    checks = (
        ("recall", found.recall, required.min_recall, "--min-recall", False),
        ("handoff recall", found.handoff_recall, required.min_handoff_recall,
         "--min-handoff-recall", False),
        ("false handoffs", found.false_handoff_rate, required.max_false_handoffs,
         "--max-false-handoffs", True),
    )  # fmt: skip
    missed = []
    for name, got, limit, flag, at_most in checks:
        if limit is None:
            continue
        if got is None:
            missed.append(f"{name}: no question to measure it on, {flag} {limit:g} not met")
        elif (got > limit) if at_most else (got < limit):
            side = "above" if at_most else "below"
            missed.append(f"{name} {got:.1%} is {side} {flag} {limit:.1%}")
    return tuple(missed)
