"""21. The index's first cut against ranking every passage: the same recall, the same
handoffs, the same offline answers?

Over git's and PostgreSQL's manuals (smoke: a generated set), every question of the
quality, handoff and follow-up sets (a follow-up with its thread, as the chat asks it) is
selected twice, in one process, against the same kept index: with the first cut
(gateway.knowledge.cut) and with it off (every passage holding a word ranked, as before
it). Per set:

- page recall at 2,000 tokens, the default budget and 16,000 (the answerable questions
  and follow-ups: a passage of an answering page in the prompt), and evidence recall (an
  answering page's words in it), with the cut against without: within 0.5 points;
- questions whose handoff decision (`relevance.uncovered`, the default floor) differs;
- offline answers (the `local` deployment's) from another article than without the cut,
  and those whose sentences differ (the same article: information only);
- a selection's time, with the cut against without (median over the questions).

The cut's defaults were tuned on these sets, so each figure but the time is also given for
their held-out half alone (`bench.docsets.halves`: the first half of each list of each
file; a follow-up's two questions go together).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.context import Context
from bench.docsets import BENCH, GIT_DOC, PG_DOC, copy_pages, halves, normal, write_html_set
from bench.procs import RunFailed
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "19 first cut"
SAME = Target.at_most(Measure.TOTAL, 0, "none")
RECALL = Target.at_least("within 0.5 points", (Measure.ADDED_TOTAL, -0.005))
HALVES = ("all", "held-out")  # the whole set's figures, then its held-out half's
SETS = {
    GIT_DOC.name: (GIT_DOC, ("questions-git.yaml", "followups-git.yaml")),
    PG_DOC.name: (PG_DOC, ("questions-pg.yaml", "followups-postgresql.yaml")),
}


@dataclass(frozen=True)
class Asked:
    text: str
    turns: tuple[Any, ...] = ()  # the chat before it
    answers: Mapping[str, str | None] | None = None  # answering page -> its words; None: none
    held_out: bool = False  # in its list's held-out half


def questions(files: Sequence[str]) -> list[Asked]:
    """Every question of the sets: answerable, unanswerable, follow-ups with threads."""
    from gateway.model import Role, Turn

    def answerable(q: Mapping[str, Any], held_out: bool) -> list[Asked]:
        return [Asked(q["q"], answers=q["answers"], held_out=held_out)]

    def unanswerable(q: Mapping[str, Any], held_out: bool) -> list[Asked]:
        return [Asked(q["q"], held_out=held_out)]

    def followup(item: Mapping[str, Any], held_out: bool) -> list[Asked]:
        turns = tuple(Turn(Role(t["role"]), t["content"]) for t in item["thread"])
        pages = dict.fromkeys(item["answers"])
        return [Asked(item["standalone"], answers=pages, held_out=held_out),
                Asked(item["follow_up"], turns, pages, held_out)]  # fmt: skip

    out: list[Asked] = []
    for name in files:
        data = yaml.safe_load((BENCH / name).read_text())
        for key, asked in (
            ("questions", answerable),
            ("unanswerable", unanswerable),
            ("followups", followup),
        ):
            held_out, tuned = halves(data.get(key, []))
            out += [each for item in held_out for each in asked(item, True)]
            out += [each for item in tuned for each in asked(item, False)]
    return out


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    if ctx.sizes.real_docs:
        for label, (docs, files) in SETS.items():
            if not docs.installed:
                raise RunFailed(docs.missing())
            folder = ctx.folder(f"firstcut-{label}")
            copy_pages(docs.folder, folder)
            rows += _compare(ctx, label, folder, questions(files))
    else:
        folder = ctx.folder("firstcut-generated")
        write_html_set(folder, ctx.sizes.generated_bytes)
        held_out, tuned = halves(["How do I reset my password?", "What is the server?"])
        asked = [Asked(t, held_out=True) for t in held_out] + [Asked(t) for t in tuned]
        rows += _compare(ctx, "generated", folder, asked)
    return rows


def _compare(ctx: Context, label: str, folder: Path, asked: Sequence[Asked]) -> list[Row]:
    from gateway.config import load_default_config
    from gateway.knowledge.cut import DEFAULT
    from gateway.knowledge.files import discover
    from gateway.knowledge.query import Query
    from gateway.knowledge.relevance import uncovered
    from gateway.knowledge.select import best_within
    from gateway.knowledge.store import SqliteIndex
    from gateway.model import Request
    from gateway.providers.local import answer

    settings = load_default_config().articles
    default = settings.max_tokens or 6000
    budgets = sorted({2000, default, 16000})
    index = SqliteIndex.open(ctx.folder(f"firstcut-{label}-index") / "index.sqlite",
                             [folder], warn=lambda _: None)  # fmt: skip
    index.refresh(discover([folder])[0])
    ways = {"cut": DEFAULT, "every passage": None}
    pages = {(w, b, h): 0 for w in ways for b in budgets for h in HALVES}
    evidence = {(w, b, h): 0 for w in ways for b in budgets for h in HALVES}
    timing: dict[str, list[float]] = {w: [] for w in ways}
    handoffs, other_article, other_words = ({h: 0 for h in HALVES} for _ in range(3))
    for item in asked:
        halves_in = HALVES if item.held_out else HALVES[:1]
        query = Query.of_chat(item.text, item.turns)
        said: dict[str, tuple[bool, str | None]] = {}
        for way, first in ways.items():
            index.cut = first
            for budget in budgets:
                started = time.perf_counter()
                sources = best_within(query, index, budget).sources
                if budget == default:
                    timing[way].append(time.perf_counter() - started)
                    handoff = uncovered(query, sources, index, settings.min_relevance)
                    text = None
                    if handoff is None:
                        request = Request("", item.text, 400, sources=sources, turns=item.turns)
                        text = answer(request)
                    said[way] = (handoff is None, text)
                if item.answers:
                    got = {Path(s.path).relative_to(folder).as_posix() for s in sources}
                    prompt = normal(" ".join(s.text for s in sources))
                    found = any(
                        words and normal(words) in prompt for words in item.answers.values()
                    )
                    for half in halves_in:
                        pages[way, budget, half] += bool(got & item.answers.keys())
                        evidence[way, budget, half] += found
        (cut_asks, cut_text), (all_asks, all_text) = said["cut"], said["every passage"]
        same = _article(cut_text) == _article(all_text)
        for half in halves_in:
            handoffs[half] += cut_asks != all_asks
            other_words[half] += cut_text != all_text and same
            other_article[half] += cut_text != all_text and not same
    index.close()
    rows = []
    for half in HALVES:
        # The whole set's rows keep their names; the held-out half's say so.
        part = [a for a in asked if a.held_out or half == "all"]
        name = label if half == "all" else f"{label}, held-out half"
        n, note = sum(bool(a.answers) for a in part) or 1, f"of {len(part)} questions"
        for budget in budgets:
            for figure, counts in (("page recall", pages), ("evidence recall", evidence)):
                rows.append(Row(GROUP, f"{name}: {figure}, budget {budget:,}", Unit.PERCENT,
                                value=counts["cut", budget, half] / n,
                                base_value=counts["every passage", budget, half] / n,
                                target=RECALL))  # fmt: skip
        rows += [
            Row(GROUP, f"{name}: handoff decisions that differ", Unit.COUNT,
                value=handoffs[half], note=note, target=SAME),
            Row(GROUP, f"{name}: offline answers from another article", Unit.COUNT,
                value=other_article[half], note=note, target=SAME),
            Row(GROUP, f"{name}: offline answers, other sentences of the article", Unit.COUNT,
                value=other_words[half], note=note),
        ]  # fmt: skip
    rows.append(Row(GROUP, f"{label}: a selection at {default:,} tokens, with the cut",
                    Unit.MILLIS, Summary.of(timing["cut"]), Summary.of(timing["every passage"]),
                    "ranking every passage"))  # fmt: skip
    return rows


def _article(text: str | None) -> str | None:
    """The article an offline answer is from: its first words name it."""
    return None if text is None else text.split("\u201d", 1)[0]
