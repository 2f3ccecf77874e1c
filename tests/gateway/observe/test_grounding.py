"""Judging the deployments' answers to a golden set: citations of an answering article,
dropped markers, handoffs by reason, and shares with nothing to count."""

from __future__ import annotations

from gateway.model import Action, Citation, Handoff, HandoffReason, Result, Route, Status
from gateway.observe.golden import GoldenQuestion
from gateway.observe.grounding import Asked, asked_totals

REFUND = GoldenQuestion("How do I get a refund?", ("billing/refunds.md",), True, 1)
BITCOIN = GoldenQuestion("Can I pay in bitcoin?", (), False, 3)


def result(action: Action | None, *paths: str, dropped: int = 0,
           handoff: HandoffReason | None = None) -> Result:  # fmt: skip
    cited = tuple(Citation(n, p, "t", "", None) for n, p in enumerate(paths, start=1))
    return Result(
        Status.ANSWERED if action else Status.FAILED, "text", "mini", "openai", "m",
        Route.NORMAL, 10, 0.1, (), action=action, citations=cited, citations_dropped=dropped,
        handoff=None if handoff is None else Handoff(handoff, "why"),
    )  # fmt: skip


def test_an_answer_citing_the_answering_article_under_its_folder_counts() -> None:
    one = Asked.of(REFUND, result(Action.ANSWER, "kb/faq.md", "kb/billing/refunds.md",
                                  "kb/billing/refunds.md", dropped=2))  # fmt: skip
    assert one.cites_answering is True and one.dropped == 2
    assert one.cited == ("kb/faq.md", "kb/billing/refunds.md")  # each once, first cited first
    assert Asked.of(REFUND, result(Action.ANSWER, "kb/faq.md")).cites_answering is False
    assert Asked.of(BITCOIN, result(Action.ANSWER, "kb/faq.md")).cites_answering is None


def test_the_totals_count_handoffs_by_reason_and_leave_empty_shares_none() -> None:
    asked = [
        Asked.of(REFUND, result(Action.ANSWER, "kb/billing/refunds.md", dropped=1)),
        Asked.of(REFUND, result(Action.HANDOFF, handoff=HandoffReason.UNCITED)),
        Asked.of(REFUND, result(None)),
        Asked.of(BITCOIN, result(Action.HANDOFF, handoff=HandoffReason.NOT_COVERED)),
    ]
    at = asked_totals(asked)
    assert (at.answered, at.unanswered, at.dropped_answers) == (1, 1, 1)
    assert at.handoffs == (("uncited", 1), ("not_covered", 1))
    assert (at.handoff_recall, at.false_handoff_rate, at.cited_rate) == (1.0, 1 / 3, 1.0)
    empty = asked_totals([])
    assert (empty.handoff_recall, empty.false_handoff_rate, empty.cited_rate) == (None,) * 3
