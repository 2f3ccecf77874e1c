"""A question's help-centre part in one process, over each folder and under each
`articles.refresh` rule, the calls taking turns: what the question does that grows with
the set (`open_centre` as `ask` opens it, then `select` at the default budget), without
the process's start-up, which does not. Prints one JSON object: each rule's seconds per
call, per folder, and whether every call over a folder chose the same passages.

Run by bench/speedpass.py with this tree on PYTHONPATH; the first call over each folder
(untimed) makes its index in CACHE.

    python bench/doubling_worker.py CACHE ROUNDS QUESTION FOLDER...
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

RULES = {"every_question": False, "on_index": True}  # the rule -> open_centre's `trust`


def main(cache: str, rounds: str, question: str, *folders: str) -> None:
    from gateway.config import load_default_config
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.select import select

    budget = load_default_config().articles.max_tokens

    def ask(folder: str, trust: bool) -> list[tuple[str, str, str]]:
        index = open_centre(
            [Path(folder)], limits=ArticleCaps(), cache_dir=lambda: Path(cache),
            whole=budget is None, warn=lambda _: None, trust=trust,
        )  # fmt: skip
        try:
            return [(s.path, s.heading, s.text) for s in select(question, index, budget).sources]
        finally:
            index.close()

    chosen = {folder: ask(folder, False) for folder in folders}  # untimed: the index made
    seconds: dict[str, dict[str, list[float]]] = {r: {f: [] for f in folders} for r in RULES}
    same = True
    for turn in range(int(rounds)):
        order = [(f, r) for f in folders for r in RULES]
        shift = turn % len(order)
        for folder, rule in order[shift:] + order[:shift]:
            started = time.perf_counter()
            got = ask(folder, RULES[rule])
            seconds[rule][folder].append(time.perf_counter() - started)
            same = same and got == chosen[folder]
    print(json.dumps({"seconds": seconds, "same": same}))


if __name__ == "__main__":
    main(*sys.argv[1:])
