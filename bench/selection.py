"""What choosing the passages costs per question, in-process, through gateway.knowledge's
public API: the help centre opened once through its kept index (as a warm question does),
then `select(question, index, budget)` per question, alternating with the page BM25
baseline's rank + fill of the same question, so both see the same machine.

A tree without gateway.knowledge (before the help-centre work) has nothing to time here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bm25 import PageBM25
from bench.docsets import Question
from bench.stats import Summary


def available() -> bool:
    try:
        import gateway.knowledge.centre
        import gateway.knowledge.select  # noqa: F401
    except ImportError:
        return False
    return True


def default_budget(config: Path) -> int | None:
    """The budget a question gets when no flag says otherwise (the config's
    `articles.max_tokens`, None for `all`)."""
    from gateway.config import load_config

    settings: Any = load_config(config)
    return settings.articles.max_tokens  # type: ignore[no-any-return]


def costs(
    folder: Path,
    cache: Path,
    questions: Sequence[Question],
    budget: int | None,
    baseline: PageBM25 | None,
    fill_tokens: Sequence[int],
    repeats: int,
) -> tuple[Summary, Summary | None]:
    """Seconds per question for the tool's selection and (when there is one) the
    baseline's, over `repeats` passes of every question."""
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.select import select

    index = open_centre(
        [folder], limits=ArticleCaps(), cache_dir=lambda: cache, whole=False, warn=lambda _: None,
        keep=True,
    )  # fmt: skip
    select(questions[0].text, index, budget)  # warm: page cache, the database's first read
    tool: list[float] = []
    base: list[float] = []
    clock = time.perf_counter
    for rep in range(repeats):
        for i, q in enumerate(questions):
            first_tool = (rep + i) % 2 == 0
            for which in ("tool", "base") if first_tool else ("base", "tool"):
                if which == "tool":
                    t0 = clock()
                    select(q.text, index, budget)
                    tool.append(clock() - t0)
                elif baseline is not None:
                    base.append(baseline.fill(q.text, fill_tokens[i], cut=True).seconds)
    close = getattr(index, "close", None)
    if callable(close):
        close()
    return Summary.of(tool), Summary.of(base) if base else None
