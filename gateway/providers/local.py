"""The offline deployment: answers from the help centre itself, with no network and no key.

It answers with the best passage (`gateway.knowledge.rank`, the same ranker that chooses
the prompt's passages) as plain text, trimmed to the prompt's word limit, naming its
article and citing it with its marker (`[n]`, its place among the sources sent) as the
prompt asks a model to. When the passages were chosen by rank already, it takes the best
of those without ranking again; otherwise it ranks the articles it was given. When the
best passage does not cover the question well enough (its coverage, the share of the
question's weight it holds, is not MORE than half), it hands off as the prompt says: the
handoff marker with its reason, then the "not covered" sentence. A question of stopwords
only is not covered.
"""

from __future__ import annotations

import re
from dataclasses import replace

from gateway.config import Deployment
from gateway.knowledge.passages import ITEM
from gateway.model import PageKind, Reply, Request, Source, TextSink
from prompts import HANDOFF_MARKER, WORD_LIMIT, marker, not_covered

MODEL = "local-bm25"
MIN_COVERAGE = 0.5  # answer only when the best passage holds MORE than half the weight
NOT_COVERED_REASON = "no article covers this question"


def best_passage(request: Request) -> Source | None:
    """The passage to answer from, with its score and coverage; None if none matches."""
    ranked = [s for s in request.sources if s.score is not None]
    if ranked:
        # The prompt's order groups passages by article: the best is the highest score.
        # A navigation page (a book index, a table of contents) answers nothing.
        answering = [s for s in ranked if s.kind is PageKind.ARTICLE]
        return max(answering, key=lambda s: s.score or 0.0) if answering else None
    if not request.articles:
        return None
    from gateway.knowledge.index import MemoryIndex
    from gateway.knowledge.query import Query
    from gateway.knowledge.rank import rank

    index = MemoryIndex(request.articles)
    found = [
        r for r in rank(Query.of_chat(request.question, request.turns), index) if not r.navigation
    ]
    if not found:
        return None
    top = found[0]
    return replace(index.fetch([top.key])[0], score=top.score, coverage=top.coverage)


def answer(request: Request, words: int = WORD_LIMIT) -> str:
    """The offline answer within `words` words: the best passage, citing it, or the
    handoff."""
    match = best_passage(request)
    if match is None or (match.coverage or 0.0) <= MIN_COVERAGE:
        return f"{HANDOFF_MARKER} {NOT_COVERED_REASON}\n{not_covered(request.product)}"
    prefix = f"From \u201c{match.title}\u201d:"
    number = _number(request, match)
    cite = "" if number is None else f" {marker(number)}"
    room = words - len(prefix.split()) - len(cite.split())
    return f"{prefix} {trim(plain(match.text), room)}{cite}"


def _number(request: Request, match: Source) -> int | None:
    """The marker's number of the source `match` is (or is part of: a whole article)."""
    for number, source in enumerate(request.sources, start=1):
        if source.article == match.article and source.number in (match.number, None):
            return number
    return None


_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)[^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1|(?<![\w*])\*(?!\s)([^*\n]+?)\*(?![\w*])")
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


def plain(body: str) -> str:
    """Markdown reduced to plain sentences on one line: the prompt allows no markdown.

    Each paragraph, list item and table row becomes one sentence; a line that merely
    continues a wrapped paragraph or item joins the one before.
    """
    items: list[list[str]] = []
    for paragraph in body.split("\n\n"):
        starting = True
        for raw in paragraph.split("\n"):
            if _TABLE_RULE.match(raw):
                continue
            if starting or ITEM.match(raw) or raw.lstrip().startswith("|"):
                items.append([])
                starting = False
            items[-1].append(ITEM.sub("", raw))
    sentences: list[str] = []
    for item in items:
        line = _LINK.sub(_link_text, " ".join(item))
        line = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), line)
        line = _TAG.sub("", line).replace("`", "")
        line = " ".join(line.replace("|", " ").split())
        if line:
            sentences.append(line if line[-1] in ".!?:;," else line + ".")
    return " ".join(sentences)


def _link_text(match: re.Match[str]) -> str:
    text, target = match.group(1), match.group(2)
    if match.group(0).startswith("!"):
        return text
    if target.startswith(("http://", "https://")) and target not in text:
        return f"{text} ({target})"
    return text


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
