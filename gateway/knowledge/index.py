"""The index seam: what the one ranker asks of any index, and the index kept in memory.

An index answers two questions. `hits(terms)`: for the question's terms, every passage and
title holding one, with counts and the set's totals, which is all BM25 needs (`rank`
computes the scores, so every index ranks alike); a large kept index answers for the
articles its first cut chooses (`cut`), each whole. `fetch(keys)`: the passages chosen, with
their text. `MemoryIndex` serves a set read this run (a small help centre, `max_tokens:
all`, or when no index can be kept); `gateway.knowledge.store.SqliteIndex` keeps one on disk.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from gateway.model import Article, PageKind, Source
from gateway.record import field, record
from gateway.tokens import estimate

if TYPE_CHECKING:
    # Imported when first needed: a help centre sent whole is never cut or searched.
    from gateway.knowledge.passages import Passage

PassageKey = tuple[int, int]
"""A passage's key: (its article's place in the set, its place in the article)."""


class PassageFacts(NamedTuple):
    """A passage's size and place, as the ranker needs them. A NamedTuple, not a record:
    a question over a large help centre makes one per passage hit (thousands), and a
    tuple is several times cheaper to make."""

    words: int
    first: bool  # the first passage of its section: the one whose heading counts for the article
    tokens: int  # its body's estimated tokens (`gateway.tokens.estimate`)


@record
class Hits:
    """Where some terms occur in a set: per passage (body, heading), per article (title).

    Each passage's and title's counts hold the terms in the order they were asked for
    (the ranker sums them in that order). `df` counts the passages holding a term, and
    the titles: `units` is how many of both there are in the set (BM25's N).
    `navigation`: the articles hit that are navigation pages (`PageKind.NAVIGATION`).
    The index that finds them fills the tables in.
    """

    units: int
    articles: int
    article_words: float  # the set's average article length, in words
    df: Counter[str] = field(default_factory=Counter)
    body: dict[PassageKey, dict[str, int]] = field(default_factory=dict)
    heading: dict[PassageKey, dict[str, int]] = field(default_factory=dict)
    title: dict[int, dict[str, int]] = field(default_factory=dict)
    facts: dict[PassageKey, PassageFacts] = field(default_factory=dict)
    lengths: dict[int, int] = field(default_factory=dict)  # article -> words, for those hit
    navigation: set[int] = field(default_factory=set)


@record
class SetSize:
    articles: int
    tokens: int  # every article's estimated tokens, added up


class Index(Protocol):
    """A help centre's passages, searchable by term. Implementations: `MemoryIndex`,
    `gateway.knowledge.store.SqliteIndex`."""

    def size(self) -> SetSize: ...

    def hits(self, terms: Sequence[str], budget: int | None = None) -> Hits:
        """The counts of `terms` in the passages holding one. `budget`: the tokens of
        the prompt they are ranked for (None: no prompt's), which an index that counts
        only a first cut of a large set's articles grows its cut by."""
        ...

    def fetch(self, keys: Sequence[PassageKey]) -> list[Source]:
        """The passages at `keys`, in that order, with their text (score left None)."""
        ...

    def articles(self) -> tuple[Article, ...]:
        """Every article, whole, in the set's order (when all fit the budget)."""
        ...

    def close(self) -> None: ...


_BLANK = re.compile(r"\n[ \t]*\n")


class MemoryIndex:
    """An index of articles held in memory, built in one pass over them.

    Terms are found by literal scans of one lowercased string rather than by tokenising
    every article: each term's stem is a prefix of every word that stems to it, so only
    the words found there are checked. A small help centre is answered this way in about
    a millisecond, and without importing sqlite3.
    """

    def __init__(self, articles: Sequence[Article]) -> None:
        self._articles = tuple(articles)
        self._split: list[list[Passage]] | None = None  # cut on first use: a help centre
        self._lengths: list[int] = []  # sent whole is never cut into passages
        self._corpus: str | None = None
        self._located: dict[int, tuple[list[Segment], list[int]]] = {}

    @property
    def _passages(self) -> list[list[Passage]]:
        if self._split is None:
            from gateway.knowledge.passages import split

            self._split = [split(article) for article in self._articles]
            self._lengths = [len(a.text.split()) for a in self._articles]
        return self._split

    def size(self) -> SetSize:
        return SetSize(len(self._articles), sum(estimate(a.text) for a in self._articles))

    def articles(self) -> tuple[Article, ...]:
        return self._articles

    def close(self) -> None:
        """Nothing to release: the articles are plain objects."""

    def fetch(self, keys: Sequence[PassageKey]) -> list[Source]:
        out = []
        for article_number, number in keys:
            article = self._articles[article_number]
            passage = self._passages[article_number][number]
            out.append(source(article, article_number, passage))
        return out

    def _layout(self) -> str:
        parts: list[str] = []
        self._starts: list[int] = []
        self._title_ends: list[int] = []
        position = 0
        for article in self._articles:
            part = _lower(f"{article.title}\n{article.text}\n\n")
            self._starts.append(position)
            self._title_ends.append(position + len(article.title) + 1)
            parts.append(part)
            position += len(part)
        return "".join(parts)

    def hits(self, terms: Sequence[str], budget: int | None = None) -> Hits:
        passages = self._passages
        if self._corpus is None:
            self._corpus = self._layout()
        units = len(self._articles) + sum(len(p) for p in passages)
        average = sum(self._lengths) / len(self._articles) if self._articles else 1.0
        found = Hits(units, len(self._articles), average or 1.0)
        for term in terms:
            self._scan(found, term)
        # A title's words are in every passage of its article: each is a candidate.
        keys = found.body.keys() | found.heading.keys()
        keys |= {(a, p.number) for a in found.title for p in self._passages[a]}
        for key in sorted(keys):
            passage = passages[key[0]][key[1]]
            found.facts[key] = PassageFacts(
                passage.words, passage.first, estimate(passage.body(self._articles[key[0]]))
            )
        for number in {k[0] for k in found.facts} | found.title.keys():
            found.lengths[number] = self._lengths[number]
            if self._articles[number].kind is PageKind.NAVIGATION:
                found.navigation.add(number)
        return found

    def _segments(self, article: int) -> tuple[list[Segment], list[int]]:
        located = self._located.get(article)
        if located is None:
            segments = _segments(self._passages[article])
            located = self._located[article] = (segments, [s[0] for s in segments])
        return located

    def _scan(self, found: Hits, term: str) -> None:
        from gateway.knowledge.terms import STOPWORDS, stem

        corpus = self._corpus
        assert corpus is not None
        # Every word that stems to `term` starts with it, or with all but its last letter
        # when the stem turned "-ies" into "-y".
        prefix = term[:-1] if term.endswith("y") and len(term) > 2 else term
        units: set[object] = set()
        for match in re.finditer(re.escape(prefix) + r"[^\W_]*", corpus):
            start = match.start()
            if start and corpus[start - 1].isalnum():
                continue
            word = match.group()
            if word in STOPWORDS or stem(word) != term or (len(word) == 1 and not word.isdigit()):
                continue
            article = bisect_right(self._starts, start) - 1
            if start < self._title_ends[article]:
                found.title.setdefault(article, Counter())[term] += 1
                units.add(article)
                continue
            segments, starts = self._segments(article)
            segment = _locate(segments, starts, start - self._title_ends[article])
            if segment is None:
                continue
            table = found.heading if segment[2] else found.body
            for number in segment[3]:
                table.setdefault((article, number), Counter())[term] += 1
                units.add((article, number))
        found.df[term] = len(units)


Segment = tuple[int, int, bool, tuple[int, ...]]  # start, end, is a heading, passages


def _segments(passages: Sequence[Passage]) -> list[Segment]:
    """Where each passage's body and each section's heading lie, in text order. A heading
    belongs to every passage of its section."""
    sections: dict[tuple[int, int], list[int]] = {}
    out: list[Segment] = []
    for passage in passages:
        out.append((passage.start, passage.end, False, (passage.number,)))
        if passage.heading_span is not None:
            sections.setdefault(passage.heading_span, []).append(passage.number)
    out.extend((span[0], span[1], True, tuple(numbers)) for span, numbers in sections.items())
    out.sort()
    return out


def _locate(segments: Sequence[Segment], starts: Sequence[int], offset: int) -> Segment | None:
    found = bisect_right(starts, offset) - 1
    if found < 0:
        return None
    segment = segments[found]
    return segment if offset < segment[1] else None


def _lower(text: str) -> str:
    """Lowercase without changing the length, so positions still point into the original."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def source(article: Article, article_number: int, passage: Passage) -> Source:
    body = passage.body(article)
    return Source(
        path=article.path,
        title=article.title,
        heading=passage.heading,
        text=body,
        tokens=estimate(body),
        article=article_number,
        number=passage.number,
        url=article.url,
        kind=article.kind,
    )
