"""Choosing what the prompt holds: every article when they all fit the budget, else the
best passages up to it, grouped by article.

The budget is in estimated tokens (`gateway.tokens.estimate`). Articles are ordered by
their best passage's rank; an article's passages keep their order in it, so a section
read together reads as written. A passage too big for what is left is passed over for
smaller ones further down the ranking, so the budget fills.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.knowledge.index import Index
from gateway.model import Article, Source
from gateway.tokens import estimate


@dataclass(frozen=True)
class Selection:
    """What one prompt holds. `whole`: every article, as read (`articles`); else the
    chosen passages (`sources`, in the prompt's order, each with its score)."""

    sources: tuple[Source, ...]
    whole: bool
    articles: tuple[Article, ...] = ()

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.sources)


def everything(articles: tuple[Article, ...]) -> Selection:
    """Every article, whole and unranked: today's prompt."""
    sources = tuple(
        Source(a.path, a.title, "", a.text, estimate(a.text), number, None)
        for number, a in enumerate(articles)
    )
    return Selection(sources, whole=True, articles=articles)


def select(question: str, index: Index, budget: int | None) -> Selection:
    """The articles or passages for `question` within `budget` tokens (None: no limit)."""
    if budget is None or index.size().tokens <= budget:
        return everything(index.articles())
    return best_within(question, index, budget)


def best_within(question: str, index: Index, budget: int) -> Selection:
    """The best passages for `question` that fit in `budget` tokens together."""
    from gateway.knowledge.rank import rank

    chosen = []
    left = budget
    for found in rank(question, index):
        if found.tokens <= left:
            chosen.append(found)
            left -= found.tokens
            if left <= 0:
                break
    # Only the chosen passages' text is read, in one go.
    sources = index.fetch([found.key for found in chosen])
    scored = [_scored(s, f.score, f.coverage) for s, f in zip(sources, chosen, strict=True)]
    return Selection(_grouped(scored), whole=False)


def _scored(source: Source, score: float, coverage: float) -> Source:
    return replace(source, score=score, coverage=coverage)


def _grouped(chosen: list[Source]) -> tuple[Source, ...]:
    """Best article first (by its best passage), each article's passages in its order."""
    by_article: dict[int, list[Source]] = {}
    for source in chosen:  # best first: dict order is each article's best rank
        by_article.setdefault(source.article, []).append(source)
    return tuple(
        s for group in by_article.values() for s in sorted(group, key=lambda s: s.number or 0)
    )
