"""The offline deployment: answers from the articles themselves, with no network and no key.

It splits articles into passages (the text under one heading, in chunks of at most the
prompt's word limit), ranks them against the question with BM25, and answers with the best
passage as plain text, trimmed to the word limit and naming its article. When the best
passage does not cover the question well enough, it gives the prompt's "not covered" reply.

Why a hand-written ranker rather than a library (rank_bm25): BM25 is a few lines; the
library tokenises every document into Python lists and pulls in numpy, whose import alone
costs more than answering from a thousand articles here; and every detail that decides an
answer (tokens, stemming, tie-breaks, the threshold) stays deterministic and visible. It
also allows the shortcut that makes this fast: only the question's words are looked for
(literal scans of one lowercased string), and only the articles that could still win are
split into passages.

Scoring: a passage's score is its own BM25 (title and body) plus its heading's BM25 plus
its article's BM25, with document frequencies counted by paragraph.

The "well enough" threshold is coverage: the share of the question's idf weight that the
best passage holds, which must be MORE than half. Rare words carry the meaning of a
question ("invoice", "Slack"), common ones little. A word no article contains weighs as
much as the question's rarest known word, so "Can I pay with bitcoin?" (half the weight
unknown) is not answered from the billing article just because it mentions paying, while
"How do I reset my password quickly?" still is. A question of stopwords only is not covered.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.config import Deployment
from gateway.model import Article, Reply, Request, TextSink
from prompts import WORD_LIMIT, not_covered

MODEL = "local-bm25"
MIN_COVERAGE = 0.5  # answer only when the best passage holds MORE than half the weight
K1 = 1.2  # BM25 term-frequency saturation (the usual value)
B = 0.75  # BM25 length normalisation (the usual value)
HEADING_WEIGHT = 2  # a heading names what its section is about: it counts twice
TITLE_WEIGHT = 2  # in an article's own score, its title's words count twice
# Passages are cut to at most WORD_LIMIT words, so their lengths are measured against half.
AVERAGE_PASSAGE_WORDS = WORD_LIMIT / 2

_STOPWORDS = """
    a about above after again against all also am an and any anyone anything are aren as
    at be because been before being below between both but by can cannot cant could
    couldn did didn do does doesn doing don during each either else even ever every
    few for from get gets getting got had has have having he hello help her here hers him
    his hi how i if im in into is isn it its itself ive just let like may me might mine
    more most must my myself need no nor not now of off on once only or other our ours out
    over own please same shall she should so some someone something such than thank
    thanks that the their theirs them then there these they this those through to too
    under until up us use using very want was we were what when where whether which while
    who whom whose why will with won would yes you your yours yourself
    """
STOPWORDS = frozenset(_STOPWORDS.split())

_WORD = re.compile(r"[^\W_]+")


def _tokens(text: str) -> list[str]:
    """Lowercased content words: stopwords and single letters carry no topic."""
    return [
        w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    ]


_stems: dict[str, str] = {}
_DOUBLE_OK = frozenset("lsz")  # "billing" -> "bill", not "bil"


def stem(word: str) -> str:
    """A light, deterministic suffix stripper: plurals, -ing, -ed, -ation, a final e."""
    cached = _stems.get(word)
    if cached is not None:
        return cached
    result = word
    if len(result) > 3 and not result.isdigit():
        if result.endswith("ies") and len(result) > 4:
            result = result[:-3] + "y"
        elif result.endswith("sses"):
            result = result[:-2]
        elif result.endswith("s") and not result.endswith(("ss", "us", "is")):
            result = result[:-1]
        for suffix in ("ing", "ed"):
            if result.endswith(suffix) and len(result) - len(suffix) >= 3:
                result = result[: -len(suffix)]
                if result[-1] == result[-2] and result[-1] not in _DOUBLE_OK:
                    result = result[:-1]  # "resetting" -> "reset"
                break
        if result.endswith("ation") and len(result) > 7:
            result = result[:-5] + "ate"  # "integration" -> "integrate"
        if result.endswith("e") and len(result) > 4:
            result = result[:-1]  # "invoice", "invoices", "invoiced" -> "invoic"
    if len(_stems) > 100_000:
        _stems.clear()  # a long-lived process meets unbounded vocabularies
    _stems[word] = result
    return result


def query_terms(question: str) -> list[str]:
    """The question's distinct content words, stemmed, in order."""
    terms: list[str] = []
    for word in _tokens(question):
        term = stem(word)
        if term not in terms:
            terms.append(term)
    return terms


@dataclass(frozen=True)
class Passage:
    """Part of one section of an article: what the offline deployment answers with."""

    article: int  # index into the articles, for naming and tie-breaks
    heading: str  # the section's heading ("" under the title)
    body: str  # the text as written (markdown-ish), without the heading
    start: int  # where `body` starts in the article's text
    end: int
    words: int


@dataclass(frozen=True)
class Match:
    passage: Passage
    score: float
    coverage: float  # the share of the question's weight the passage holds, 0..1


_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)]|>)\s+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")

Span = tuple[int, int]


def _plain_heading(line: str) -> bool:
    """A short unpunctuated line standing alone, as plain-text articles write headings."""
    text = line.strip()
    return (
        text[:1].isupper()
        and len(text.split()) <= 8
        and text[-1] not in ".!?:;,"
        and not _ITEM.match(line)
    )


@dataclass
class _Section:
    heading: str
    heading_span: Span | None
    paragraphs: list[Span]


def _sections(article: Article) -> list[_Section]:
    """The article's sections: a heading's span and its paragraphs' spans in the text.

    The heading that repeats the title counts as none: the title is scored on its own.
    """
    text = article.text
    title = article.title.strip().casefold()
    sections = [_Section("", None, [])]
    lines: list[Span] = []  # the current paragraph's lines
    fenced = False

    def start_section(span: Span) -> None:
        heading = _ATX.sub(r"\1", text[span[0] : span[1]]).split("\n")[0].strip()
        if heading.casefold() == title:
            sections.append(_Section("", None, []))
        else:
            sections.append(_Section(heading, span, []))

    def end_paragraph() -> None:
        if len(lines) == 1 and _plain_heading(text[lines[0][0] : lines[0][1]]):
            start_section(lines[0])
        elif lines:
            sections[-1].paragraphs.append((lines[0][0], lines[-1][1]))
        lines.clear()

    position = 0
    for line in text.split("\n"):
        span = (position, position + len(line))
        position = span[1] + 1
        if _FENCE.match(line):
            fenced = not fenced
            lines.append(span)
        elif fenced:
            lines.append(span)
        elif _ATX.match(line):
            end_paragraph()
            start_section(span)
        elif _UNDERLINE.match(line):
            if len(lines) == 1:  # setext: the line above is a heading
                start_section((lines[0][0], span[1]))
                lines.clear()
            else:
                end_paragraph()  # a thematic break
        elif line.strip():
            lines.append(span)
        else:
            end_paragraph()
    end_paragraph()
    return [section for section in sections if section.paragraphs]


def _passages(index: int, article: Article) -> list[tuple[Passage, Span | None]]:
    """Each section's paragraphs grouped up to the word limit, with the heading's span."""
    text = article.text
    out: list[tuple[Passage, Span | None]] = []
    for section in _sections(article):
        group: list[Span] = []
        words = 0
        for start, end in section.paragraphs:
            size = len(text[start:end].split())
            if group and words + size > WORD_LIMIT:
                out.append((_passage(index, article, section, group, words), section.heading_span))
                group, words = [], 0
            group.append((start, end))
            words += size
        out.append((_passage(index, article, section, group, words), section.heading_span))
    return out


def _passage(
    index: int, article: Article, section: _Section, group: list[Span], words: int
) -> Passage:
    start, end = group[0][0], group[-1][1]
    return Passage(index, section.heading, article.text[start:end], start, end, words)


class _Hits:
    """Where the question's terms occur in every article: found by literal scans, not tokens.

    Tokenising every article would cost more than the whole answer may take; instead each
    term's stem, a prefix of every word it stems from, is searched for in one lowercased
    string, and only the words found there are checked. Document frequencies are counted
    by paragraph: in a small help centre every article says "email", but few paragraphs do.
    """

    def __init__(self, articles: Sequence[Article], terms: list[str]) -> None:
        self.title: list[Counter[str]] = [Counter() for _ in articles]
        self.text: list[list[tuple[int, str]]] = [[] for _ in articles]  # (position, term)
        parts: list[str] = []
        self._starts: list[int] = []
        self._title_ends: list[int] = []
        position = 0
        for article in articles:
            part = _lower(f"{article.title}\n{article.text}\n\n")
            self._starts.append(position)
            self._title_ends.append(position + len(article.title) + 1)
            parts.append(part)
            position += len(part)
        corpus = "".join(parts)
        self.lengths = [len(part) for part in parts]
        self._breaks = [found.start() for found in _BLANK_LINE.finditer(corpus)]
        self.paragraphs = len(self._breaks)  # every article ends with a blank line
        self.df: Counter[str] = Counter()
        for term in terms:
            self._scan(corpus, term)
        for positions in self.text:
            positions.sort()

    def _scan(self, corpus: str, term: str) -> None:
        # Every word that stems to `term` starts with it, or with all but its last letter
        # when the stem turned "-ies" into "-y".
        prefix = term[:-1] if term.endswith("y") and len(term) > 2 else term
        paragraphs: set[int] = set()
        for found in re.finditer(re.escape(prefix) + r"[^\W_]*", corpus):
            start = found.start()
            if start and corpus[start - 1].isalnum():
                continue
            word = found.group()
            if word in STOPWORDS or stem(word) != term:
                continue
            article = bisect_right(self._starts, start) - 1
            if start < self._title_ends[article]:
                self.title[article][term] += 1
            else:
                offset = start - self._title_ends[article]
                self.text[article].append((offset, term))
            paragraphs.add(bisect_right(self._breaks, start))
        self.df[term] = len(paragraphs)


def _lower(text: str) -> str:
    """Lowercase without changing the length, so positions still point into the original."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _bm25(tf: Mapping[str, int], length: float, average: float, idf: Mapping[str, float]) -> float:
    norm = K1 * (1 - B + B * length / average)
    return sum(idf[t] * _share(n, norm) for t, n in tf.items())


def _share(tf: int, norm: float) -> float:
    """One term's saturated frequency in BM25: 0 when absent, below K1 + 1 however often."""
    return tf * (K1 + 1) / (tf + norm)


def rank(question: str, articles: Sequence[Article]) -> Match | None:
    """The best passage for the question, with its score and coverage; None if no overlap.

    A passage's score is its own BM25 plus its article's: the article says what the
    question is about ("Team members and roles"), the passage which part answers it.
    Articles are visited best bound first, and the search stops once no passage of the
    remaining ones could win, so most articles are never split into passages.
    """
    terms = query_terms(question)
    if not terms or not articles:
        return None
    hits = _Hits(articles, terms)
    n, df = hits.paragraphs, hits.df
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) if df[t] else 0.0 for t in terms}
    average = sum(hits.lengths) / len(articles)
    candidates = []
    for index in range(len(articles)):
        title, text = hits.title[index], Counter(term for _, term in hits.text[index])
        if not title and not text:
            continue
        weighted = text + Counter({t: count * TITLE_WEIGHT for t, count in title.items()})
        score = _bm25(weighted, hits.lengths[index], average, idf)
        # No passage of this article can score more: its body holds at most the article's
        # occurrences in the shortest length, its heading at most the text's.
        most = title + text
        bound = score + sum(
            idf[t] * (_share(most[t], K1 * (1 - B)) + HEADING_WEIGHT * _share(text[t], K1))
            for t in most
        )
        candidates.append((-bound, index, score))
    if not candidates:
        return None
    candidates.sort()

    best: Match | None = None
    best_key = (0.0, 0, 0)
    for negative_bound, index, article_score in candidates:
        if best is not None and -negative_bound < best.score:
            break
        text_hits = hits.text[index]
        for number, (passage, heading) in enumerate(_passages(index, articles[index])):
            tf = Counter(hits.title[index])
            in_heading: Counter[str] = Counter()
            for position, term in text_hits:
                if passage.start <= position < passage.end:
                    tf[term] += 1
                elif heading and heading[0] <= position < heading[1]:
                    in_heading[term] += 1
            if not tf and not in_heading:
                continue
            # The heading is scored apart from the body, so a section titled with the
            # question's words wins over one that merely repeats them.
            score = (
                article_score
                + _bm25(tf, passage.words, AVERAGE_PASSAGE_WORDS, idf)
                + HEADING_WEIGHT * _bm25(in_heading, 1, 1, idf)
            )
            tf.update(in_heading)
            key = (score, -index, -number)  # ties go to the earlier article and passage
            if best is None or key > best_key:
                best, best_key = Match(passage, score, _coverage(tf, idf)), key
    return best


def _coverage(tf: Mapping[str, int], idf: Mapping[str, float]) -> float:
    """The share of the question's idf weight that a passage holds.

    A word no article contains weighs as much as the rarest word that some article does
    contain: enough that an unknown subject ("bitcoin") is not answered from a passage
    matching only a common word, without letting one stray word ("quickly") outweigh two
    matched ones.
    """
    cap = max(idf.values())
    weights = {term: value or cap for term, value in idf.items()}
    return sum(w for term, w in weights.items() if tf.get(term)) / sum(weights.values())


def answer(question: str, articles: Sequence[Article], product: str) -> str:
    """The offline answer: the best passage, or the "not covered" reply."""
    match = rank(question, articles)
    if match is None or match.coverage <= MIN_COVERAGE:
        return not_covered(product)
    title = articles[match.passage.article].title
    prefix = f"From \u201c{title}\u201d:"
    return f"{prefix} {trim(plain(match.passage.body), WORD_LIMIT - len(prefix.split()))}"


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
            if starting or _ITEM.match(raw) or raw.lstrip().startswith("|"):
                items.append([])
                starting = False
            items[-1].append(_ITEM.sub("", raw))
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
        text = answer(request.question, request.articles, request.product)
        if on_text is not None:
            for chunk in re.findall(r"\S+\s*", text):
                on_text(chunk)
        return Reply(text=text, finish_reason="stop", model=MODEL)
