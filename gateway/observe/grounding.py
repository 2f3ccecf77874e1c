"""What asking the deployments made of a golden set: each question asked as `ask` asks it,
then judged against the articles that answer it (`gateway.observe.golden`).

Per question: the action a script would take (answer, handoff with its reason, or none:
nothing answered), whether an answer cites an answering article (the citations are the
ones the code kept: passages that were sent), and how many markers were dropped (the
model cited a passage it was not sent). Over the questions:

- handoff recall and false handoffs as a script meets them: unanswerable questions
  handed off for any reason, answerable ones handed off;
- cited: the share of answerable questions answered whose answer cites an answering
  article (an answer citing only other articles may still read well, but its sources
  are wrong);
- the answers with a dropped citation, and the questions nothing answered.

Pure: the Results are passed in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gateway.model import Action, Result
from gateway.observe.golden import GoldenQuestion
from gateway.observe.retrieval import HandoffShares, matches, rounded, share
from gateway.record import record


@record
class Asked:
    """One golden question's Result, judged. `cited`: the articles the answer cites,
    first cited first, each once; `cites_answering`: for an answerable question answered,
    whether one of them answers it (None otherwise)."""

    question: GoldenQuestion
    action: Action | None
    reason: str | None  # the handoff's reason
    deployment: str | None
    cited: tuple[str, ...]
    cites_answering: bool | None
    dropped: int

    @classmethod
    def of(cls, question: GoldenQuestion, result: Result) -> Asked:
        cited = tuple(dict.fromkeys(c.path for c in result.citations))
        answered = result.action is Action.ANSWER
        cites = (
            any(matches(p, a) for p in cited for a in question.articles)
            if answered and question.answerable
            else None
        )
        return cls(
            question,
            result.action,
            None if result.handoff is None else str(result.handoff.reason),
            result.deployment,
            cited,
            cites,
            result.citations_dropped,
        )

    def as_json(self) -> dict[str, object]:
        return {
            "action": None if self.action is None else str(self.action),
            "handoff": self.reason,
            "deployment": self.deployment,
            "cited": list(self.cited),
            "cites_answering": self.cites_answering,
            "citations_dropped": self.dropped,
        }


@record
class AskedTotals(HandoffShares):
    answerable: int
    unanswerable: int
    answered: int  # every question with action `answer`
    handoffs: tuple[tuple[str, int], ...]  # by reason, most first
    unanswered: int  # nothing answered: a refusal or a failure
    handed_off: int  # unanswerable, handed off
    false_handoffs: int  # answerable, handed off
    answered_answerable: int
    cites_answering: int  # of those, citing an answering article
    dropped_answers: int  # answers with at least one marker dropped

    @property
    def cited_rate(self) -> float | None:
        return share(self.cites_answering, self.answered_answerable)

    def as_json(self) -> dict[str, object]:
        return {
            "answered": self.answered,
            "handoffs": dict(self.handoffs),
            "unanswered": self.unanswered,
            "handoff_recall": rounded(self.handoff_recall),
            "false_handoffs": rounded(self.false_handoff_rate),
            "cites_answering": rounded(self.cited_rate),
            "cites_answering_count": self.cites_answering,
            "answered_answerable": self.answered_answerable,
            "answers_with_dropped_citations": self.dropped_answers,
        }


def asked_totals(asked: Sequence[Asked]) -> AskedTotals:
    answerable = [a for a in asked if a.question.answerable]
    unanswerable = [a for a in asked if not a.question.answerable]
    reasons = Counter(a.reason for a in asked if a.action is Action.HANDOFF and a.reason)
    answered = [a for a in answerable if a.action is Action.ANSWER]
    return AskedTotals(
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        answered=sum(1 for a in asked if a.action is Action.ANSWER),
        handoffs=tuple(reasons.most_common()),
        unanswered=sum(1 for a in asked if a.action is None),
        handed_off=sum(1 for a in unanswerable if a.action is Action.HANDOFF),
        false_handoffs=sum(1 for a in answerable if a.action is Action.HANDOFF),
        answered_answerable=len(answered),
        cites_answering=sum(1 for a in answered if a.cites_answering),
        dropped_answers=sum(1 for a in asked if a.action is Action.ANSWER and a.dropped),
    )
