"""The one ranker: BM25 over passages, used for the prompt's selection and by the offline
`local` deployment alike, whatever index holds the help centre.

Why hand-written rather than a library (rank_bm25, bm25s): the formula is a few lines;
the libraries tokenise into numpy arrays, and importing numpy alone costs more than a
question over a thousand articles here; and every detail that decides an answer (terms,
stemming, weights, tie-breaks, the coverage threshold) stays deterministic and visible.
The index supplies counts (`Index.hits`), this module the arithmetic.

Scoring: a passage's score is its article's BM25 (title words count `TITLE_WEIGHT` times)
plus its own BM25 (its body and the title) plus its heading's BM25 counted
`HEADING_WEIGHT` times: the article says what the question is about ("Team members and
roles"), the passage which part answers it, and a section titled with the question's
words wins over one that merely repeats them. Document frequencies count passages and
titles. Ties go to the earlier article, then the earlier passage.

A navigation page's passages (a book index, a table of contents: `shape`) score
`NAVIGATION_WEIGHT` times what they would: they hold the words of every page they point
to, and would otherwise fill the prompt of a big manual's questions with lists of titles.

Coverage is the share of the question's idf weight that a passage holds. Rare words carry
the meaning of a question ("invoice", "Slack"), common ones little. A word no article
contains weighs `UNKNOWN_WEIGHT` (3) times the question's rarest known word, so "Can I
pay with bitcoin?" (three quarters of the weight unknown) is not covered by the billing
article just because it mentions paying, nor "How do I install Docker on Ubuntu?" by a
manual's install page. It is what `relevance` reads to decide whether the help centre
covers a question at all, and what the offline `local` deployment answers by.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import NamedTuple

from gateway.knowledge.index import Index, PassageKey
from gateway.knowledge.query import Query, as_query
from prompts import WORD_LIMIT

K1 = 1.2  # BM25 term-frequency saturation (the usual value)
B = 0.75  # BM25 length normalisation (the usual value)
HEADING_WEIGHT = 2  # a heading names what its section is about: it counts twice
TITLE_WEIGHT = 2  # in an article's own score, its title's words count twice
# Passages are cut to at most WORD_LIMIT words, so their lengths are measured against half.
AVERAGE_PASSAGE_WORDS = WORD_LIMIT / 2
# In coverage, a word no article contains weighs this many times the question's rarest
# known word: a name the help centre never mentions ("Docker", "bitcoin") is the surest
# sign a question is about something else. 3 was chosen on the tuning half of bench/run
# quality's questions (bench/RESULTS.md); 1 handed off fewer unanswerable questions there.
UNKNOWN_WEIGHT = 3
# A navigation page's passages score this share of what they would; chosen on the tuning
# half of bench/run offline's questions (bench/RESULTS.md).
NAVIGATION_WEIGHT = 0.5
# A ranked passage made as the tuple it is: `Ranked`'s own constructor is a Python function,
# called once per passage hit (thousands a question over a large help centre).
_tuple = tuple.__new__


class Ranked(NamedTuple):
    """A passage as ranked. A NamedTuple, not a record: one is made per passage hit,
    thousands per question over a large help centre."""

    key: PassageKey
    score: float
    coverage: float  # the share of the question's weight the passage holds, 0..1
    tokens: int  # the passage's estimated size
    navigation: bool = False  # of a navigation page (`PageKind.NAVIGATION`)


# The sort's keys, got in C rather than by a Python function called per passage.
_key, _score = attrgetter("key"), attrgetter("score")


def _bm25(tf: Mapping[str, int], length: float, average: float, idf: Mapping[str, float]) -> float:
    norm = K1 * (1 - B + B * length / average)
    return sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in tf)


def rank(question: str | Query, index: Index, budget: int | None = None) -> list[Ranked]:
    """Every passage holding a word of the question, best first (`budget`: the prompt's
    tokens they are ranked for, `Index.hits`). A `Query` weighs its terms (a chat's
    earlier turns count less than its current message): each term's idf is multiplied by
    its weight, in the scores and in the coverage alike."""
    emphasis = as_query(question).weights()
    terms = list(emphasis)
    if not terms:
        return []
    hits = index.hits(terms, budget)
    n, df = hits.units, hits.df
    idf = {
        t: emphasis[t] * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) if df[t] else 0.0
        for t in terms
    }
    if not any(idf.values()):
        return []
    per_article: dict[int, dict[str, int]] = {}
    body_of, heading_of = hits.body, hits.heading
    # No empty dict made per passage for a default: most passages' articles are met before.
    for key, facts in hits.facts.items():
        counts = per_article.get(key[0])
        if counts is None:
            counts = per_article[key[0]] = {}
        if body := body_of.get(key):
            for term, count in body.items():
                counts[term] = counts.get(term, 0) + count
        if facts.first and (heading := heading_of.get(key)):
            # A heading shared by a section's passages counts once.
            for term, count in heading.items():
                counts[term] = counts.get(term, 0) + count
    for article, title in hits.title.items():
        counts = per_article.setdefault(article, {})
        for term, count in title.items():
            counts[term] = counts.get(term, 0) + TITLE_WEIGHT * count
    article_score = {
        article: _bm25(counts, hits.lengths[article], hits.article_words, idf)
        for article, counts in per_article.items()
    }
    cap = max(idf.values())
    weights = {term: value or UNKNOWN_WEIGHT * cap * emphasis[term] for term, value in idf.items()}
    total = sum(weights.values())
    # The passage loop is the ranker's hot path (thousands of passages for a common word
    # in a big manual): plain dicts and local names, no Counter built per passage.
    saturation = K1 + 1
    no_norm = K1 * (1 - B)
    per_word = K1 * B / AVERAGE_PASSAGE_WORDS
    heading_norm = K1  # a heading is scored as a one-word document of average length
    empty: dict[str, int] = {}
    place = {term: number for number, term in enumerate(weights)}
    navigation, title_of = hits.navigation, hits.title
    heading_weight = HEADING_WEIGHT
    ranked = []
    for key, facts in hits.facts.items():
        article = key[0]
        title = title_of.get(article, empty)
        body = body_of.get(key, empty)
        heading = heading_of.get(key, empty)
        norm = no_norm + per_word * facts.words
        score = article_score[article]
        held = 0.0
        # Only the question's words the passage holds add to it, taken in the question's
        # order (the order the sums were always made in, so the scores are the same). An
        # index's counts hold the terms in the order asked (`Hits`): a passage with only
        # body words (most) is summed in its own order, with no set made or sorted.
        if not (heading or title):
            for term, tf in body.items():
                score += idf[term] * tf * saturation / (tf + norm)
                held += weights[term]
        else:
            present = body.keys() | heading.keys() | title.keys()
            held_terms: Iterable[str] = (
                sorted(present, key=place.__getitem__) if len(present) > 1 else present
            )
            for term in held_terms:
                tf = title.get(term, 0) + body.get(term, 0)
                in_heading = heading.get(term, 0)
                if tf:
                    score += idf[term] * tf * saturation / (tf + norm)
                if in_heading:
                    score += (
                        heading_weight
                        * idf[term]
                        * in_heading
                        * saturation
                        / (in_heading + heading_norm)
                    )
                held += weights[term]
        if article in navigation:
            ranked.append(
                _tuple(Ranked, (key, score * NAVIGATION_WEIGHT, held / total, facts.tokens, True))
            )
        else:
            ranked.append(_tuple(Ranked, (key, score, held / total, facts.tokens, False)))
    # Best first, ties to the earlier key: by key, then (stably) by score.
    ranked.sort(key=_key)
    ranked.sort(key=_score, reverse=True)
    return ranked
