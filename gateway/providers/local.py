"""The offline deployment: answers from the help centre itself, with no network and no key.

It answers with sentences of the best passages (`gateway.knowledge.extract`, over the
passages the one ranker chose for the prompt), in plain text within the prompt's word
limit, naming their article and citing each passage used with its marker (`[n]`, its
place among the sources sent) as the prompt asks a model to. When the passages were
chosen by rank already, it reads those without ranking again; otherwise it ranks the
articles it was given. A navigation page (a book index, a table of contents) is never
answered from. When the help centre does not cover the question (`relevance`: its best
answering passage below the team's relevance floor, `Request.min_relevance`, else the
default), it hands off as the prompt says: the handoff marker with its reason, then the
"not covered" sentence. A question of
stopwords only is not covered. Its own words (the article's naming, the not-covered
sentence) are the request's `wording`: in the customer's language (`gateway.answers.phrases`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.answers.phrases import Phrase, said
from gateway.config import Deployment
from gateway.model import PageKind, Reply, Request, Source, TextSink
from gateway.record import replace
from prompts import HANDOFF_MARKER, WORD_LIMIT, marker

if TYPE_CHECKING:
    from gateway.knowledge.extract import Unit

MODEL = "local-bm25"
NOT_COVERED_REASON = "no article covers this question"
PASSAGES = 3  # of a whole article sent unranked, its best passages are read


def answering(request: Request) -> list[Source]:
    """The passages to answer from: the prompt's passages of the article of its best
    answering passage (the ranker's score), in the article's order; empty: none."""
    ranked = [s for s in request.sources if s.score is not None]
    if not ranked:
        return _ranked_here(request)
    usable = [s for s in ranked if s.kind is PageKind.ARTICLE]
    if not usable:
        return []
    best = max(usable, key=lambda s: s.score or 0.0)  # ties: the earlier in the prompt
    return sorted((s for s in usable if s.article == best.article), key=lambda s: s.number or 0)


def best_passage(request: Request) -> Source | None:
    """The best passage to answer from, with its score and coverage; None if none."""
    found = answering(request)
    return max(found, key=lambda s: s.score or 0.0) if found else None


def _ranked_here(request: Request) -> list[Source]:
    if not request.articles:
        return []
    from gateway.knowledge.index import MemoryIndex
    from gateway.knowledge.query import Query
    from gateway.knowledge.rank import rank

    index = MemoryIndex(request.articles)
    query = Query.of_chat(request.question, request.turns)
    found = [r for r in rank(query, index) if not r.navigation]
    if not found:
        return []
    top = [r for r in found if r.key[0] == found[0].key[0]][:PASSAGES]
    fetched = index.fetch([r.key for r in top])
    pairs = zip(fetched, top, strict=True)
    scored = [replace(s, score=r.score, coverage=r.coverage) for s, r in pairs]
    return sorted(scored, key=lambda s: s.number or 0)


def _covered(request: Request, found: list[Source]) -> bool:
    """Whether the help centre covers the question, by the one rule every answering path
    asks (`relevance.uncovered`, at the team's floor, else the default): over the prompt's
    passages as the selection scored them, or those ranked here, which carry the same
    coverage."""
    from gateway.knowledge.query import Query
    from gateway.knowledge.relevance import DEFAULT_MIN_RELEVANCE, uncovered

    if not found:
        return False
    query = Query.of_chat(request.question, request.turns)
    scored = any(s.score is not None for s in request.sources)
    floor = DEFAULT_MIN_RELEVANCE if request.min_relevance is None else request.min_relevance
    return uncovered(query, request.sources if scored else found, None, floor) is None


def answer(request: Request, words: int = WORD_LIMIT) -> str:
    """The offline answer within `words` words: sentences of the best passages, citing
    them, or the handoff."""
    found = answering(request)
    if not _covered(request, found):
        sentence = said(Phrase.NOT_COVERED, request.wording, product=request.product)
        return f"{HANDOFF_MARKER} {NOT_COVERED_REASON}\n{sentence}"
    from gateway.knowledge.extract import choose, plain, units

    prefix = said(Phrase.FROM_ARTICLE, request.wording, title=found[0].title)
    every = units([s.text for s in found])
    weights = _weights(request)
    room = words - len(prefix.split()) - len(found)  # a marker a passage, at most
    best = max(range(len(found)), key=lambda i: found[i].score or 0.0)
    chosen = choose(every, weights, room, [s.heading for s in found], best)
    numbers = {_number(request, found[u.passage]) for u in chosen}
    cite = " ".join(marker(n) for n in sorted(n for n in numbers if n is not None))
    if not chosen:  # not one sentence fits: the best passage's first words
        number = _number(request, found[best])
        cite = "" if number is None else f" {marker(number)}"
        room = words - len(prefix.split()) - len(cite.split())
        return f"{prefix} {trim(plain(found[best].text), room)}{cite}"
    return _layout(prefix, chosen, cite)


def _weights(request: Request) -> dict[str, float]:
    """The question's terms, each weighing its idf among the passages sent: the ranker's
    weights (`rank`) as far as the request can tell them, so that "refund" outweighs
    "plan" in a help centre about plans."""
    import math

    from gateway.knowledge.query import Query
    from gateway.knowledge.terms import terms

    emphasis = Query.of_chat(request.question, request.turns).weights()
    texts = [f"{s.heading}\n{s.text}" for s in request.sources] or [
        a.text for a in request.articles
    ]
    held = [set(terms(t)) & emphasis.keys() for t in texts]
    n = len(held)
    df = {t: sum(t in h for h in held) for t in emphasis}
    return {t: w * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t, w in emphasis.items()}


def _layout(prefix: str, chosen: Sequence[Unit], cite: str) -> str:
    """The prefix, the prose on one line, each code block on its own lines as written;
    the markers after the last sentence (never inside code), else after the prefix."""
    last_prose = max((i for i, u in enumerate(chosen) if not u.code), default=-1)
    head = f"{prefix} {cite}" if last_prose < 0 and cite else prefix
    out = [head]
    for i, unit in enumerate(chosen):
        if unit.code:
            out.append(f"\n{unit.text}\n")
            continue
        text = f"{unit.text} {cite}" if cite and i == last_prose else unit.text
        out.append(text if out[-1].endswith("\n") else f" {text}")
    return "".join(out).rstrip("\n")


def _number(request: Request, match: Source) -> int | None:
    """The marker's number of the source `match` is (or is part of: a whole article)."""
    for number, source in enumerate(request.sources, start=1):
        if source.article == match.article and source.number in (match.number, None):
            return number
    return None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def trim(text: str, limit: int) -> str:
    """At most `limit` words: whole sentences when any fits, else the first words and '…'."""
    words = text.split()
    if len(words) <= limit:
        return " ".join(words)
    kept: list[str] = []
    count = 0
    for sentence in _SENTENCE_END.split(text):
        size = len(sentence.split())
        if count + size > limit:
            break
        kept.append(sentence.strip())
        count += size
    if kept:
        return " ".join(kept)
    return " ".join(words[:limit]) + "\u2026"


class LocalProvider:
    """`provider: local`: the offline last resort. Implements `gateway.seams.Provider`."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment

    def complete(
        self,
        request: Request,
        *,
        timeout: float,
        on_text: TextSink | None = None,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply:
        # The deadlines need no enforcing: ranking takes milliseconds and cannot block.
        text = answer(request)
        if on_text is not None:
            for chunk in re.findall(r"\S+\s*", text):
                on_text(chunk)
        return Reply(text=text, finish_reason="stop", model=MODEL)
