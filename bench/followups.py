"""15. Follow-ups in a chat: does the prompt hold the answering page of a customer's next
message, the one that only makes sense with the thread before it?

For each follow-up of bench/followups-*.yaml (over git's and PostgreSQL's manuals, 20+
each), the passages chosen within the default budget (`articles.max_tokens`), in-process
through gateway.knowledge (the index kept on disk, as a question opens it), for: the same
question asked standalone (what a person reading the chat would ask), the follow-up with
its thread (the tool's chat query), and the follow-up alone (what was sent before
threads). The goal: with its thread, within 5 points of standalone, far above alone.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from bench.context import Context
from bench.docsets import GIT_DOC, PG_DOC, DocSet, copy_pages
from bench.stats import Measure, Row, Target, Unit

GROUP = "15 follow-ups"
SETS = {
    GIT_DOC.name: (GIT_DOC, Path(__file__).with_name("followups-git.yaml")),
    PG_DOC.name: (PG_DOC, Path(__file__).with_name("followups-postgresql.yaml")),
}
BUDGET = 6000  # the bundled config's articles.max_tokens


def _load(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    items: list[dict[str, Any]] = data["followups"]
    return items


def _pages(index: Any, query: Any, folder: Path) -> set[str]:
    from gateway.knowledge.select import select

    chosen = select(query, index, BUDGET)
    root = folder.resolve()
    out = set()
    for source in chosen.sources:
        path = Path(source.path)
        path = path if path.is_absolute() else folder / path
        try:
            out.add(path.resolve().relative_to(root).as_posix())
        except ValueError:
            out.add(source.path)
    return out


def _measure(ctx: Context, docset: DocSet, questions: Path) -> list[Row]:
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.query import Query
    from gateway.model import Role, Turn

    folder = ctx.folder(f"followups-{docset.name}")
    copy_pages(docset.folder, folder, docset.suffixes)
    cache = ctx.folder(f"followups-{docset.name}-cache")
    index = open_centre(
        [folder], limits=ArticleCaps(), cache_dir=lambda: cache, whole=False,
        warn=lambda _: None, keep=True,
    )  # fmt: skip
    items = _load(questions)
    found = {"standalone": 0, "with its thread": 0, "alone": 0}
    for item in items:
        for page in item["answers"]:
            if not (folder / page).is_file():
                raise RuntimeError(f"{questions.name}: no page {page} in {docset.name}")
        turns = tuple(Turn(Role(t["role"]), t["content"]) for t in item["thread"])
        queries = {
            "standalone": item["standalone"],
            "with its thread": Query.of_chat(item["follow_up"], turns),
            "alone": item["follow_up"],
        }
        for name, query in queries.items():
            hit = bool(_pages(index, query, folder) & set(item["answers"]))
            found[name] += hit
            if not hit and name != "alone":
                print(f"  follow-up miss ({name}): {item['follow_up']!r}", file=sys.stderr)
    close = getattr(index, "close", None)
    if callable(close):
        close()
    count = len(items)
    group = f"{GROUP}, {docset.name} ({count} q)"
    standalone = found["standalone"] / count
    return [
        Row(group, "recall, standalone question", Unit.PERCENT, value=standalone),
        Row(
            group,
            "recall, follow-up with its thread",
            Unit.PERCENT,
            value=found["with its thread"] / count,
            base_value=standalone,
            target=Target.at_least(">= standalone - 5 points", (Measure.ADDED_TOTAL, -0.05 - 1e-9)),
        ),
        Row(group, "recall, follow-up alone", Unit.PERCENT, value=found["alone"] / count),
    ]


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    for docset, questions in SETS.values():
        if not ctx.sizes.real_docs or not docset.installed:
            rows.append(
                Row(
                    f"{GROUP}, {docset.name}",
                    "recall",
                    Unit.COUNT,
                    note="skipped: needs bench/setup",
                )
            )
            continue
        rows += _measure(ctx, docset, questions)
    return rows
