"""Whether the help centre covers a question: one figure from 0 to 1, and the floor it
must reach.

The figure is the best coverage among the passages the prompt holds (`rank.Ranked.coverage`:
the share of the question's idf weight a passage contains, a word no article has weighing
as much as the question's rarest known word). It is a share, not a raw BM25 score, so one
floor means the same over a dozen articles as over a thousand-page manual: a BM25 score
grows with the set's size and the question's length, a share does not. It is read from
the sources the selection already scored, so deciding costs nothing more; only a help
centre sent whole (unranked, `Selection.whole`) is ranked here, and that is a small one.
A navigation page's passages never count (`shape`): a book index holds the words of
almost any question, and covering one with it answers nothing.

`covers()` is the whole rule: a question is covered when its relevance reaches the floor
(`articles.min_relevance`, default `DEFAULT_MIN_RELEVANCE`, measured by `bench/run
handoff`; see bench/RESULTS.md). A floor of 0 covers every question, so a team can turn
the handoff off. No help centre, or a question of stopwords only, has relevance 0.

`uncovered()` is the one decision every answering path makes with it before any model is
asked (`ask`, `batch`, the offline deployment): the `not_covered` handoff, or None to ask.
Without any help centre at all (no `--articles`, nothing in the prompt) there is nothing
to measure against, and the model is asked as before: the prompt tells it there are no
articles.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.config.model import ArticleSettings
from gateway.knowledge.index import Index
from gateway.knowledge.query import Query
from gateway.model import Handoff, HandoffReason, PageKind, Source
from gateway.record import record

# Defined once, with the config key it is the default of.
DEFAULT_MIN_RELEVANCE = ArticleSettings.min_relevance


@record
class Relevance:
    """How well the help centre covers one question. `score`: 0..1; `path`: the article of
    the passage that holds it (None when nothing matched)."""

    score: float
    path: str | None = None

    def covers(self, floor: float) -> bool:
        return self.score >= floor


NONE = Relevance(0.0)


def relevance(question: str | Query, sources: Sequence[Source], index: Index | None) -> Relevance:
    """The relevance of the prompt's `sources` (a `Selection`'s, or a `Request`'s) to
    `question`. Sources the ranker scored are read as they are; whole articles sent
    unranked are ranked in `index` first (None: no help centre, relevance 0)."""
    scored = [s for s in sources if s.coverage is not None]
    if scored:
        answering = [s for s in scored if s.kind is PageKind.ARTICLE]
        if not answering:
            return NONE
        best = max(answering, key=lambda s: (s.coverage or 0.0, s.score or 0.0))
        return Relevance(best.coverage or 0.0, best.path)
    if index is None or not sources:
        return NONE
    from gateway.knowledge.rank import rank

    ranked = [r for r in rank(question, index) if not r.navigation]
    if not ranked:
        return NONE
    top = max(ranked, key=lambda r: (r.coverage, r.score))
    # A whole article's source is numbered by its place in the set, as a key's article is.
    path = next((s.path for s in sources if s.article == top.key[0]), None)
    return Relevance(top.coverage, path)


def covers(
    question: str | Query,
    sources: Sequence[Source],
    index: Index | None,
    floor: float = DEFAULT_MIN_RELEVANCE,
) -> bool:
    """Whether the help centre covers `question`: False means hand it off (`not_covered`)
    without asking any model."""
    return relevance(question, sources, index).covers(floor)


def uncovered(
    question: str | Query,
    sources: Sequence[Source],
    index: Index | None,
    floor: float = DEFAULT_MIN_RELEVANCE,
) -> Handoff | None:
    """The `not_covered` handoff of `question` when the help centre (`index`, and the
    prompt's `sources` chosen from it) does not cover it, or None: ask a deployment. No
    help centre at all (`index` None, no sources): None, nothing to measure against."""
    if index is None and not sources:
        return None
    found = relevance(question, sources, index)
    if found.covers(floor):
        return None
    best = (
        "no article holds a word of it"
        if found.path is None
        else (f"its best passage ({found.path}) reaches {found.score:.2f}")
    )
    return Handoff(
        HandoffReason.NOT_COVERED,
        f"the help centre does not cover the question: {best}, under the relevance floor "
        f"{floor:.2f} (articles.min_relevance)",
    )
