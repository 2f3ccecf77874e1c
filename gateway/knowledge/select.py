"""Choosing what the prompt holds: every article when they all fit the budget, else the
best passages up to it, grouped by article.

The budget is in estimated tokens (`gateway.tokens.estimate`). Articles are ordered by
their best passage's rank; an article's passages keep their order in it, so a section
read together reads as written. A passage too big for what is left is passed over for
smaller ones further down the ranking, so the budget fills.

Each passage taken from an article makes that article's next one count `REPEAT_DECAY`
times less in the choosing (x0.9, x0.81, ...): the best passages of a big manual often
come from one or two long pages that repeat the question's words, and a prompt filled
from them alone misses the page that answers it in other words. The discount only
reorders what is taken (the scores reported stay the ranker's); an article's passages are
still taken in their rank order. On git's manual (bench/run quality) it raised page
recall at the default budget from 80% to 92.5% with as much answering text in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.knowledge.index import Index
from gateway.model import Article, Source
from gateway.record import record, replace
from gateway.tokens import estimate

if TYPE_CHECKING:
    from gateway.knowledge.query import Query
    from gateway.knowledge.rank import Ranked

REPEAT_DECAY = 0.9  # chosen on half the benchmark's questions; see the module's docstring


@record
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
        Source(a.path, a.title, "", a.text, estimate(a.text), number, None, url=a.url, kind=a.kind)
        for number, a in enumerate(articles)
    )
    return Selection(sources, whole=True, articles=articles)


def select(question: str | Query, index: Index, budget: int | None) -> Selection:
    """The articles or passages for `question` within `budget` tokens (None: no limit)."""
    if budget is None or index.size().tokens <= budget:
        return everything(index.articles())
    return best_within(question, index, budget)


def best_within(question: str | Query, index: Index, budget: int) -> Selection:
    """The best passages for `question` that fit in `budget` tokens together."""
    from gateway.knowledge.rank import rank

    chosen = _within(rank(question, index, budget), budget)
    # Only the chosen passages' text is read, in one go.
    sources = index.fetch([found.key for found in chosen])
    scored = [_scored(s, f.score, f.coverage) for s, f in zip(sources, chosen, strict=True)]
    return Selection(_grouped(scored), whole=False)


def _within(ranked: Sequence[Ranked], budget: int) -> list[Ranked]:
    """The passages taken, in the order taken: always the best by score discounted
    `REPEAT_DECAY` times per passage already taken from its article, that fits what is left."""
    import heapq

    queues: dict[int, list[Ranked]] = {}  # per article, its passages in rank order
    for found in ranked:
        queues.setdefault(found.key[0], []).append(found)
    # (-discounted score, key, place in its article's queue): ties go to the earlier key,
    # as in the ranking.
    heap = [(-queue[0].score, queue[0].key, 0) for queue in queues.values()]
    heapq.heapify(heap)
    taken: dict[int, int] = {}
    chosen: list[Ranked] = []
    left = budget
    # Once what is left is below every passage's size nothing more can be taken: a large
    # set's prompt fills to within a token or two long before its thousands are popped.
    smallest = min((found.tokens for found in ranked), default=0)
    while heap and left > 0 and left >= smallest:
        _, key, place = heapq.heappop(heap)
        queue = queues[key[0]]
        found = queue[place]
        if found.tokens <= left:
            chosen.append(found)
            left -= found.tokens
            taken[key[0]] = taken.get(key[0], 0) + 1
        if place + 1 < len(queue):
            after = queue[place + 1]
            discount = REPEAT_DECAY ** taken.get(key[0], 0)
            heapq.heappush(heap, (-after.score * discount, after.key, place + 1))
    return chosen


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
