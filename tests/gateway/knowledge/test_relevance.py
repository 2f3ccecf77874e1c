"""Whether the help centre covers a question: the relevance figure and its floor, over a
set sent whole and over passages chosen within a budget."""

from __future__ import annotations

import pytest

from gateway.knowledge.index import MemoryIndex
from gateway.knowledge.load import load_articles
from gateway.knowledge.query import Query
from gateway.knowledge.rank import rank
from gateway.knowledge.relevance import (
    DEFAULT_MIN_RELEVANCE,
    Relevance,
    covers,
    relevance,
    uncovered,
)
from gateway.knowledge.select import best_within, select
from gateway.model import Article, HandoffReason, Role, Turn
from tests.support.helpcentre import write_centre
from tests.support.paths import REPO

KB = REPO / "examples" / "kb"
REFUND = Article(
    "Refunds",
    "billing/refunds.md",
    "# Refunds\n\n## Asking for a refund\n\nWrite to billing within 30 days of the charge "
    "for a refund of an annual plan.\n",
)
COVERED = "How do I get a refund for my plan?"
ELSEWHERE = "Can I pay the annual plan with bitcoin through Coinbase?"


@pytest.fixture(scope="module")
def kb() -> MemoryIndex:
    articles, _ = load_articles([KB])
    return MemoryIndex(articles)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    """The refund article among 60 pages of filler: ranked within a budget."""
    root = tmp_path_factory.mktemp("big")
    write_centre(root, 60)
    articles, _ = load_articles([root])
    return MemoryIndex((*articles, REFUND))


def test_a_question_the_articles_answer_is_covered_and_names_its_article(
    kb: MemoryIndex,
) -> None:
    sources = select(COVERED, kb, None).sources
    found = relevance(COVERED, sources, kb)
    assert found.covers(DEFAULT_MIN_RELEVANCE)
    assert found.path is not None and found.path.endswith("refunds.txt")
    assert covers(COVERED, sources, kb)


@pytest.mark.parametrize(
    "question",
    [
        "Can I pay with bitcoin through Coinbase?",
        "How do I book a table at your restaurant?",
        "thanks, that is all",  # stopwords only
    ],
)
def test_a_question_the_articles_do_not_answer_is_not_covered(
    kb: MemoryIndex, question: str
) -> None:
    assert not covers(question, select(question, kb, None).sources, kb)


def test_a_ranked_selection_reads_the_scores_it_already_has(big: MemoryIndex) -> None:
    selection = best_within(COVERED, big, 400)
    assert not selection.whole
    found = relevance(COVERED, selection.sources, None)  # no ranking again: no index needed
    assert found == Relevance(found.score, "billing/refunds.md")
    assert found.score == max(s.coverage or 0.0 for s in selection.sources)
    assert covers(COVERED, selection.sources, None)
    elsewhere = best_within(ELSEWHERE, big, 400).sources
    assert not covers(ELSEWHERE, elsewhere, big)


def test_the_figure_does_not_grow_with_the_help_centre(kb: MemoryIndex, big: MemoryIndex) -> None:
    """A share, unlike a BM25 score: the same article answers alike among 12 pages or 61."""
    alone = MemoryIndex((REFUND,))
    small = relevance(COVERED, select(COVERED, alone, None).sources, alone)
    large = relevance(COVERED, best_within(COVERED, big, 400).sources, big)
    assert small.score == large.score == 1.0
    # while the raw score of the very same passage moves with the set's statistics
    assert rank(COVERED, alone)[0].score != pytest.approx(rank(COVERED, big)[0].score, rel=0.2)


def test_a_floor_of_zero_covers_everything_and_one_only_a_full_match(kb: MemoryIndex) -> None:
    question = "How do I book a table at your restaurant?"
    sources = select(question, kb, None).sources
    assert covers(question, sources, kb, floor=0.0)
    assert not covers(question, sources, kb, floor=1.0)
    full = select(COVERED, MemoryIndex((REFUND,)), None)
    assert covers(COVERED, full.sources, MemoryIndex((REFUND,)), floor=1.0)


def test_no_help_centre_covers_nothing() -> None:
    assert relevance(COVERED, (), None) == Relevance(0.0)
    assert not covers(COVERED, (), None)
    assert covers(COVERED, (), None, floor=0.0)


def test_the_decision_hands_off_what_is_not_covered_saying_why_without_the_question(
    kb: MemoryIndex, big: MemoryIndex
) -> None:
    question = "How do I book a table at your restaurant?"
    handoff = uncovered(question, select(question, kb, None).sources, kb)
    assert handoff is not None and handoff.reason is HandoffReason.NOT_COVERED
    assert f"{DEFAULT_MIN_RELEVANCE:.2f} (articles.min_relevance)" in handoff.detail
    assert "restaurant" not in handoff.detail  # the customer's words stay theirs
    assert uncovered(COVERED, best_within(COVERED, big, 400).sources, big) is None
    assert uncovered(question, select(question, kb, None).sources, kb, floor=0.0) is None
    chat = Query.of_chat("and how long does it take?", [Turn(Role.CUSTOMER, "I want a refund")])
    assert uncovered(chat, select(chat, kb, None).sources, kb) is None


def test_without_any_help_centre_there_is_nothing_to_decide_and_the_model_is_asked() -> None:
    assert uncovered(ELSEWHERE, (), None) is None
    assert uncovered(ELSEWHERE, (), MemoryIndex(())) is not None  # an empty one covers nothing
