"""Asks every question of one help centre of the offline `local` deployment, in-process,
as `ask` wires it (the selection at the default budget, then the deployment), and prints
one JSON line per question: the answer, the path it cites, whether it handed off, the
seconds its selection and answer took.

Run by bench/offline.py with the tree to measure first on PYTHONPATH (this tree, or
today's extracted by `git archive`), so it uses only what both trees have:
`open_centre`, `select`, `Request`, `LocalProvider`.

    python bench/offline_worker.py FOLDER CACHE QUESTIONS.json
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path


def main(folder: str, cache: str, questions_file: str) -> None:
    from gateway.config import Deployment, load_default_config
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.select import select
    from gateway.model import ProviderKind, Request
    from gateway.providers.local import LocalProvider

    budget = load_default_config().articles.max_tokens
    index = open_centre(
        [Path(folder)], limits=ArticleCaps(), cache_dir=lambda: Path(cache),
        whole=budget is None, warn=lambda _: None,
    )  # fmt: skip
    local = LocalProvider(
        Deployment(name="local", provider=ProviderKind.LOCAL, context_window=10**6)
    )
    questions = json.loads(Path(questions_file).read_text())
    select(questions[0], index, budget)  # warm: the page cache, the database's first read
    for question in questions:
        started = time.perf_counter()
        selection = select(question, index, budget)
        request = Request(
            system="", question=question, max_output_tokens=400,
            articles=selection.articles, product="Acme Cloud", sources=selection.sources,
        )  # fmt: skip
        text = local.complete(request, timeout=30.0).text
        seconds = time.perf_counter() - started
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", text)]
        paths = [selection.sources[n - 1].path for n in cited if 0 < n <= len(selection.sources)]
        handoff = text.lstrip().startswith("[handoff]")
        print(json.dumps({"q": question, "answer": text, "paths": paths, "handoff": handoff,
                          "seconds": seconds}), flush=True)  # fmt: skip
    index.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
