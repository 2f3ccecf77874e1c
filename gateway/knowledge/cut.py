"""The kept index's first cut: which articles of a large help centre the one ranker scores.

Scoring every passage that holds a word of the question costs in proportion to the help
centre: a common word ("database", "server") is in thousands of passages of a big
manual. So `SqliteIndex.hits` lets SQLite choose a bounded set of articles first, by its
own BM25 (FTS5's `bm25()`, headings weighted `rank.HEADING_WEIGHT` as the ranker weighs
them), and hands the ranker everything it would have read of those articles: every
passage holding a word of the question, with its counts, and every passage of an article
whose title holds one. Within them the ranking is the one ranker's, unchanged (an
article's score too, as all its passages are there); the document frequencies are the
whole set's. Only the articles the cut leaves out are not ranked; a set of no more
articles than it keeps (`Cut.articles`) is ranked whole.

The articles are the best by SQLite's BM25 three ways (`Cut.candidates`): by their best
passage (`Cut.by_passage`), by all their passages' scores added up (`Cut.by_article`: a
long page about the question that no one passage sums up), and by their titles
(`Cut.by_title`). Passages are searched for the question's rarer words (`Cut.searched`):
a word in more than `Cut.common_share` of the set adds little to any score and most to
the search's cost; the ranker still counts it in every passage it reads. And they are
searched for no more rows than `Cut.postings`, the rarest words first: a word's rows grow
with the set, so without a bound each doubling of it doubled the search's cost; within
it, a larger set is searched for its question's rarest words alone (the ones that say
most about what is asked), at the cost of a smaller one.

The sizes (`Cut.postings` too) were chosen with `bench/run firstcut` over git's and
PostgreSQL's manuals: the smallest that keep page and evidence recall at 2,000 and 6,000
tokens as ranking every passage has them, the same handoffs, and every offline answer
from the same article (bench/RESULTS.md). A larger prompt holds more articles' passages
than a cut of a fixed size leaves it to choose from (at 16,000 tokens PostgreSQL's
held-out questions lost a page that ranking every passage finds), so the cut grows with
the budget (`Cut.within`): as many articles kept, and rows searched, per token of prompt
as at the default budget, never fewer than the sizes above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gateway.knowledge.rank import HEADING_WEIGHT
from gateway.knowledge.sqlite import sqlite3
from gateway.record import record, replace


@record
class Cut:
    """How many articles the first cut keeps, and which words it searches for."""

    by_passage: int = 80  # articles chosen by their best passage's score
    by_article: int = 40  # by their passages' scores added up
    by_title: int = 30  # by their titles' scores
    # A word in more than this share of the set's passages and titles is not searched
    # for (but still counted); the `searched_at_least` rarest always are.
    common_share: float = 1 / 8
    searched_at_least: int = 2
    # The searched words' passages and titles together at most this many, the rarer
    # words first (None: no bound). Each is a row FTS5 scores, so this bounds the
    # search's cost however large the set grows, where the share above grows with it.
    postings: int | None = 6000
    # The prompt's tokens per article kept, at least: the sizes above keep 150 articles
    # for the default budget's 6,000 tokens (`articles.max_tokens`), 40 tokens each.
    tokens_per_article: int = 40

    @property
    def articles(self) -> int:
        """At most how many articles it keeps: a set of no more is ranked whole."""
        return self.by_passage + self.by_article + self.by_title

    def within(self, budget: int | None) -> Cut:
        """The cut for a prompt of `budget` tokens (None: this one): each size grown by
        the budget over `tokens_per_article` a kept article, where that is more."""
        if budget is None or budget <= self.articles * self.tokens_per_article:
            return self
        scale = budget / (self.articles * self.tokens_per_article)
        return replace(
            self,
            by_passage=math.ceil(self.by_passage * scale),
            by_article=math.ceil(self.by_article * scale),
            by_title=math.ceil(self.by_title * scale),
            postings=None if self.postings is None else math.ceil(self.postings * scale),
        )

    def searched(self, df: Mapping[str, int], units: int) -> list[str]:
        """The words searched for: the known ones at most `common_share` of the set
        holds, the rarest first while their counts together are within `postings`; else
        the `searched_at_least` rarest."""
        known = sorted((n, term) for term, n in df.items() if n)
        rare, held = [], 0
        for n, term in known:
            if n > self.common_share * units or (
                self.postings is not None and held + n > self.postings
            ):
                break
            rare.append(term)
            held += n
        if len(rare) < self.searched_at_least:
            rare = [term for _, term in known[: self.searched_at_least]]
        return rare

    def candidates(
        self, db: sqlite3.Connection, words: Sequence[str], titled: Sequence[str]
    ) -> list[int]:
        """The ids of the files the ranker scores: by their passages' match of `words`,
        then by their titles' match of `titled`, each once."""
        chosen: dict[int, None] = {}
        if words:
            # Per article, its best passage's score and all its passages' together (FTS5's
            # scores are negative: the lower, the better), scored once (MATERIALIZED); only
            # the best of each ordering come back, not a row per article hit (hundreds, each
            # a tuple made and sorted here), and are put in their order here.
            found = db.execute(
                "WITH f AS MATERIALIZED (SELECT p.file AS file, min(m.score) AS best, "
                "sum(m.score) AS total FROM (SELECT rowid AS id, rank AS score FROM terms "
                "WHERE terms MATCH ? AND rank MATCH ?) m JOIN passages p ON p.id = m.id "
                "GROUP BY p.file) "
                "SELECT * FROM (SELECT 1, file, best FROM f ORDER BY best, file LIMIT ?) "
                "UNION ALL SELECT * FROM (SELECT 2, file, total FROM f ORDER BY total, file "
                "LIMIT ?)",
                (
                    match(words),
                    f"bm25({float(HEADING_WEIGHT)}, 1.0)",
                    int(self.by_passage),
                    int(self.by_article),
                ),
            ).fetchall()
            for place in (1, 2):
                ordered = sorted((row[2], row[1]) for row in found if row[0] == place)
                for _, fid in ordered:
                    chosen[fid] = None
        if titled:
            for (fid,) in db.execute(
                "SELECT rowid FROM titles WHERE titles MATCH ? ORDER BY rank, rowid "
                f"LIMIT {int(self.by_title)}",
                (match(titled),),
            ):
                chosen[fid] = None
        return list(chosen)


DEFAULT = Cut()


def match(words: Sequence[str]) -> str:
    """An FTS5 query for any of `words`."""
    # Each word quoted: a term that reads as an operator ("and", "near") is a word here.
    return " OR ".join(f'"{word}"' for word in words)


def needles(words: Sequence[str]) -> list[tuple[str, str, str]]:
    """Each word and what `counts` looks for: the word between two spaces, and the word
    twice in a row (where a plain count of the first would miss one)."""
    return [(word, f" {word} ", f" {word} {word} ") for word in words]


def counts(terms_text: str, wanted: Sequence[tuple[str, str, str]]) -> dict[str, int]:
    """How often each word of `wanted` (`needles`) is in `terms_text` (terms written
    space-separated, as the index keeps them): whole terms only."""
    out: dict[str, int] = {}
    padded = ""
    for word, needle, twice in wanted:
        # Most passages read hold one or two of the question's words: a word that is not
        # even a substring costs one scan, and the padded copy is made only for one that is.
        if word not in terms_text:
            continue
        if not padded:
            padded = f" {terms_text} "
        n = padded.count(needle)
        if n and twice in padded:
            # Two in a row share the space between them, which a count does not reuse:
            # every term between two spaces of its own (rare, and dearer to copy).
            n = f" {terms_text.replace(' ', '  ')} ".count(needle)
        if n:
            out[word] = n
    return out
