"""Words as the ranker sees them: lowercased content words, lightly stemmed.

Shared by the passages' indexing and the questions' look-ups, so both sides always agree
on what a term is.
"""

from __future__ import annotations

import re

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

WORD = re.compile(r"[^\W_]+")
# In ASCII text those are just letters and digits: a first index reads every passage, most
# of them ASCII, and this class scans about a quarter faster than the Unicode one.
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def _lowered_words(text: str) -> list[str]:
    low = text.lower()
    return (_ASCII_WORD if low.isascii() else WORD).findall(low)


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


def terms(text: str) -> list[str]:
    """Every content word of `text`, stemmed, in order (repeats kept: they are the counts).
    Stopwords and single letters carry no topic: they are not terms."""
    # `stem`'s cache look-up, inlined: every passage of a first index is read here, a few
    # hundred thousand words for a large manual.
    cached = _stems.get
    out = []
    for w in _lowered_words(text):
        if w in STOPWORDS or (len(w) == 1 and not w.isdigit()):
            continue
        found = cached(w)
        out.append(stem(w) if found is None else found)
    return out


def query_terms(question: str) -> list[str]:
    """The question's distinct content words, stemmed, in order."""
    found: list[str] = []
    for term in terms(question):
        if term not in found:
            found.append(term)
    return found
