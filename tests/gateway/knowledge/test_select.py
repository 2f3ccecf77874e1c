"""Filling the prompt's budget from the ranking (`select._within`)."""

from gateway.knowledge.rank import Ranked
from gateway.knowledge.select import _within


def ranked(*passages: tuple[int, int, float, int]) -> list[Ranked]:
    """(article, number, score, tokens) each, best first."""
    return [Ranked((a, n), score, 1.0, tokens) for a, n, score, tokens in passages]


def test_what_is_left_after_a_big_passage_is_filled_by_a_small_one_further_down() -> None:
    found = ranked((0, 0, 9.0, 90), (1, 0, 8.0, 20), (2, 0, 7.0, 30), (3, 0, 1.0, 6))
    assert [f.key for f in _within(found, 100)] == [(0, 0), (3, 0)]


def test_a_budget_below_every_passage_takes_nothing_and_one_exactly_full_stops() -> None:
    found = ranked((0, 0, 9.0, 40), (0, 1, 8.0, 60), (1, 0, 7.0, 5))
    assert _within(found, 4) == []
    assert [f.key for f in _within(found, 100)] == [(0, 0), (0, 1)]
