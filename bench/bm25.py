"""The quality baseline: plain page-level BM25 (bm25s), filling a token budget.

Every page is one document (its title and visible text), ranked by bm25s's BM25 with
English stop words and the Snowball stemmer (both bm25s's own). The prompt it would send
is filled with pages in rank order, two ways:

- `whole`: whole pages only; a page that does not fit what is left is passed over and the
  next one tried, so the budget is filled as far as whole pages allow;
- `cut`: pages in rank order, the last one cut to fill the budget exactly (the usual naive
  retrieval prompt). A cut page counts only for what it kept.

bm25s and PyStemmer are installed by bench/setup into the benchmarks' interpreter; the
tool never imports them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.docsets import Page


@dataclass(frozen=True)
class Filled:
    """What the baseline would send for one question."""

    pages: tuple[str, ...]  # page paths, in rank order
    text: str  # their text as sent (the last one cut, for `cut`)
    tokens: int
    seconds: float  # ranking + filling, this question


class PageBM25:
    def __init__(self, pages: Sequence[Page]) -> None:
        import bm25s
        import Stemmer
        import tiktoken

        from gateway.tokens import ENCODING, count_tokens

        count_tokens("load")  # the tool's check that the offline encoding is installed
        self._encoding: Any = tiktoken.get_encoding(ENCODING)  # the tool's count, cl100k
        self._bm25s: Any = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self.pages = list(pages)
        self._texts = [f"{p.title}\n{p.text}" for p in self.pages]
        self._tokens = [len(self._encoding.encode_ordinary(t)) for t in self._texts]
        corpus = bm25s.tokenize(self._texts, stopwords="en", stemmer=self._stemmer,
                                show_progress=False)  # fmt: skip
        self._index = bm25s.BM25()
        self._index.index(corpus, show_progress=False)

    def rank(self, question: str) -> list[int]:
        """Every page's position in the corpus, best first."""
        query = self._bm25s.tokenize([question], stopwords="en", stemmer=self._stemmer,
                                     show_progress=False)  # fmt: skip
        docs, _scores = self._index.retrieve(query, k=len(self.pages), show_progress=False)
        return [int(d) for d in docs[0]]

    def fill(self, question: str, budget: int, *, cut: bool) -> Filled:
        started = time.perf_counter()
        chosen: list[int] = []
        parts: list[str] = []
        left = budget
        for i in self.rank(question):
            if left <= 0:
                break
            if self._tokens[i] <= left:
                chosen.append(i)
                parts.append(self._texts[i])
                left -= self._tokens[i]
            elif cut:
                chosen.append(i)
                parts.append(self._cut(self._texts[i], left))
                left = 0
        text = "\n\n".join(parts)
        took = time.perf_counter() - started
        return Filled(tuple(self.pages[i].path for i in chosen), text, budget - left, took)

    def _cut(self, text: str, tokens: int) -> str:
        """The head of `text` that is its first `tokens` tokens."""
        return str(self._encoding.decode(self._encoding.encode_ordinary(text)[:tokens]))
