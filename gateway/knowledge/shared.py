"""One help centre for many threads: `batch` asks its questions from worker threads, and
every question ranks against the same opened index.

Neither index may be used by two threads at once: a `SqliteIndex` holds one connection
(sqlite3 forbids sharing one mid-statement) and remembers the passages its searches met;
a `MemoryIndex` lays its text out on first use. `Shared` serialises each call with one
lock. A connection per thread was the alternative; selection is CPU-bound Python under
the GIL, so the lock costs the batch little, and it keeps one cache of what was read.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from gateway.knowledge.index import Hits, Index, PassageKey, SetSize
from gateway.model import Article, Source


class Shared:
    """An `Index` safe to call from several threads: `inner`, one call at a time."""

    def __init__(self, inner: Index) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def size(self) -> SetSize:
        with self._lock:
            return self._inner.size()

    def hits(self, terms: Sequence[str], budget: int | None = None) -> Hits:
        with self._lock:
            return self._inner.hits(terms, budget)

    def fetch(self, keys: Sequence[PassageKey]) -> list[Source]:
        with self._lock:
            return self._inner.fetch(keys)

    def articles(self) -> tuple[Article, ...]:
        with self._lock:
            return self._inner.articles()

    def close(self) -> None:
        with self._lock:
            self._inner.close()
