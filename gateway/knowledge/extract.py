"""The offline answer's text: the sentences of the best passages that answer the question,
whole, in the article's order, within a word limit.

The passages come from the prompt's selection (the one ranker's), so the offline
deployment answers from what a model would have read. Of them, one article answers: the
one of the best passage (`rank`'s score) that is not a navigation page. Its passages in
the prompt are cut into units, in order: a sentence of prose, or a fenced code block
whole. A unit scores the question's weight it holds (each term's weight from the
selection's query, divided by how many of the article's units hold it, so a word on
every line counts little); the best units are kept, in the article's order, while they
fit. A code block is kept whole and verbatim, or not at all; one that follows a chosen
sentence ending in a colon ("The basic usage of this command is:") comes with it, as
the command that sentence announces.

Sentences are split by sentencex (Wikimedia's rule-based segmenter, compiled, ~300
languages): it keeps "e.g.", "Section 25.1.6." and "postgresql.conf" inside their
sentences, and costs microseconds a paragraph; a hand-written regex split at every full
stop did not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from gateway.knowledge.passages import ITEM, Fence
from gateway.knowledge.terms import terms
from gateway.record import record

MOST_UNITS = 3  # two or three sentences read as an answer; more as a page
# A unit worth less than this share of the best one is not part of the answer.
LEAST_SHARE = 0.5
# Each unit of a section holds this share of the weight of its heading's words.
HEADING_SHARE = 0.5


@record
class Unit:
    """One sentence of prose, one list item, or one code block (`code`: kept as written,
    lines and all). `block`: the paragraph, list or code block it is part of, counted
    across the passages given; `passage`: which of them."""

    text: str
    code: bool
    passage: int
    block: int
    item: bool = False  # an item of a list (a step, an option): its list reads as one

    @property
    def words(self) -> int:
        return len(self.text.split())


def units(passages: Sequence[str]) -> list[Unit]:
    """The passages' texts as units, in order."""
    out: list[Unit] = []
    block = 0
    for place, passage in enumerate(passages):
        for text, code in _blocks(passage):
            if code:
                out.append(Unit(text, True, place, block))
            elif all(ITEM.match(line) or line[:1].isspace() for line in text.split("\n")[1:]) and (
                ITEM.match(text)
            ):
                items = re.split(r"\n(?=\s*(?:[-*+]|\d{1,3}[.)]|>)\s)", text)
                out += [Unit(plain(i), False, place, block, item=True) for i in items if plain(i)]
            else:
                out += [Unit(s, False, place, block) for s in _sentences(plain(text))]
            block += 1
    return out


def _blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and lists, and fenced code blocks (the fence lines dropped), in order."""
    out: list[tuple[str, bool]] = []
    fence = Fence()
    prose: list[str] = []
    code: list[str] = []

    def end_prose() -> None:
        if any(line.strip() for line in prose):
            out.append(("\n".join(prose), False))
        prose.clear()

    for line in text.split("\n"):
        if fence.edge(line):
            if fence.inside:
                end_prose()
            else:
                if code:
                    out.append(("\n".join(code).strip("\n"), True))
                code.clear()
        elif fence.inside:
            code.append(line)
        elif line.strip():
            prose.append(line)
        else:
            end_prose()
    end_prose()
    if code:
        out.append(("\n".join(code).strip("\n"), True))
    return out


def _sentences(text: str) -> list[str]:
    if not text:
        return []
    from sentencex import segment

    return [s.strip() for s in segment("en", text) if s.strip()]


def evidence(
    found: Sequence[Unit], weights: Mapping[str, float], headings: Sequence[str] = ()
) -> tuple[list[float], list[float]]:
    """Each unit's score, and the part of it its own words hold: the question's weight
    its words hold, each word divided by the square root of how many of the units hold
    it (a word on every line tells less than one in a single sentence), plus
    `HEADING_SHARE` of what its passage's heading holds (a section answers what its
    heading names)."""
    held = [set(terms(u.text)) & weights.keys() for u in found]
    spread = {t: sum(t in h for h in held) for t in weights}
    named = [set(terms(h)) & weights.keys() for h in headings]
    scores: list[float] = []
    owns: list[float] = []
    for h, u in zip(held, found, strict=True):
        own = sum(weights[t] / math.sqrt(spread[t]) for t in h)
        titled = HEADING_SHARE * sum(weights[t] for t in named[u.passage]) if named else 0.0
        scores.append(own + titled)
        owns.append(own)
    return scores, owns


def choose(
    found: Sequence[Unit],
    weights: Mapping[str, float],
    room: int,
    headings: Sequence[str] = (),
    first: int = 0,
) -> list[Unit]:
    """The units that answer, in order, `room` words at most together.

    The best unit of passage `first` (its choice of section is kept), then the best
    units of any passage (`evidence`), up to `MOST_UNITS`; never a code block alone. An
    item of a list brings its whole list (a procedure's steps), a sentence ending in a
    colon the list or code it announces, when they fit. When no unit holds a word of the
    question (they are in the title or the heading), the first units that fit: what the
    section says first."""
    scores, owns = evidence(found, weights, headings)
    best = max(scores, default=0.0)
    if best <= 0:
        scores = [1.0] * len(found)
        best = 1.0
    # Within a section, a sentence that says the question's words itself comes first.
    # The shorter of two sentences saying as much is the more to the point ("To delete
    # your account:" before a list item that mentions deleting in passing).
    ranked = sorted(range(len(found)), key=lambda i: (-scores[i], -owns[i], found[i].words, i))
    anchor = next((i for i in ranked if found[i].passage == first), None)
    if anchor is not None:
        ranked.remove(anchor)
        ranked.insert(0, anchor)
    chosen: set[int] = set()
    left = room
    picks = 0
    for i in ranked:
        if picks >= MOST_UNITS or (picks and scores[i] < LEAST_SHARE * best):
            break
        # Code answers only as what a sentence announces: alone it explains nothing.
        if i in chosen or found[i].code or found[i].words > left:
            continue
        picks += 1
        group = _group(found, i)
        size = sum(found[g].words for g in group if g not in chosen)
        if size <= left:
            chosen.update(group)
            left -= size
        else:
            chosen.add(i)
            left -= found[i].words
    return [found[i] for i in sorted(chosen)]


def _group(found: Sequence[Unit], i: int) -> list[int]:
    """What unit `i` brings with it: its whole list, or what its colon announces."""
    unit = found[i]
    if unit.item:
        return [j for j, u in enumerate(found) if u.block == unit.block]
    if unit.text.endswith(":"):
        after = [j for j in range(i + 1, len(found)) if found[j].block == unit.block]
        if not after and i + 1 < len(found):
            after = [j for j, u in enumerate(found) if u.block == found[i + 1].block]
        return [i, *after]
    return [i]


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
