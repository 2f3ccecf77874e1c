"""13. Handing off what the help centre does not cover: the relevance floor, measured.

Full runs read two real manuals (bench/setup installs them): git's (git-doc, with
bench/questions-git.yaml) and PostgreSQL 15's (postgresql-doc-15, with
bench/questions-pg.yaml); smoke runs examples/kb with bench/questions-kb.yaml. Each file
holds answerable questions (with their answering pages, evidence checked first) and
unanswerable ones (another product, or a feature the set lacks), all in customers' words.

Every question gets, in-process through the public API, the selection `ask` makes at the
default budget and its relevance (`gateway.observe.retrieval`, as `eval --golden
--offline` does). At the default floor (`articles.min_relevance`) and at each floor of a
sweep: handoff recall (unanswerable questions handed off), false handoffs (answerable
ones handed off) and recall of the answering article (in the prompt of a question not
handed off; at floor 0 it is the selection's page recall, benchmark 9's figure). The
first half of each list is held out: it was not looked at while the figure and the floor
were chosen; both halves are reported.

The decision's cost is timed beside the selection it reads, per question, same run. And
the handoff as a user meets it: `support-ask` in a fresh process handing off a question
the set does not cover (exit 5, no deployment asked), interleaved with the same question
answered by the offline deployment with the floor off (`articles.min_relevance: 0`), both
warm (the set indexed, the page cache full): the handoff must cost no more.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from bench.context import Context
from bench.docsets import (
    GIT_DOC,
    KB,
    PG_DOC,
    QUESTIONS,
    DocSet,
    checked_questions,
    copy_pages,
    halves,
    load_questions,
)
from bench.procs import Command, RunFailed, child_env, interleave, run_once
from bench.stats import Measure, Row, Summary, Target, Unit

if TYPE_CHECKING:  # the tree measured is imported when the benchmark runs
    from gateway.knowledge.index import Index
    from gateway.observe.golden import GoldenQuestion
    from gateway.observe.retrieval import Judged

HANDOFF_TARGET = Target.at_least(">= 90%", (Measure.TOTAL, 0.90))
FALSE_TARGET = Target.at_most(Measure.TOTAL, 0.05, "<= 5%")
RECALL_TARGET = Target.at_least(">= no floor", (Measure.ADDED_TOTAL, 0.0))
COST_TARGET = Target.at_most(Measure.RATIO, 1.0, "<= 1.00x offline answer")
SHOWN = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)  # the sweep's floors in the table


@dataclass(frozen=True)
class Half:
    name: str
    judged: tuple[Judged, ...]


def _golden(docset: DocSet) -> tuple[list[GoldenQuestion], list[GoldenQuestion]]:
    """The set's questions as golden items, each list split in halves (held out first)."""
    from gateway.observe.golden import GoldenQuestion

    path = QUESTIONS[docset.name]
    data = yaml.safe_load(path.read_text())
    answerable = [GoldenQuestion(q.text, tuple(q.answers), True, 0) for q in load_questions(path)]
    unanswerable = [GoldenQuestion(u["q"], (), False, 0) for u in data.get("unanswerable", [])]
    if len(unanswerable) < (20 if docset is not KB else 1):
        raise RunFailed(f"{path.name}: {len(unanswerable)} unanswerable questions (want >= 20)")
    held: list[GoldenQuestion] = []
    tuning: list[GoldenQuestion] = []
    for items in (answerable, unanswerable):
        first, second = halves(items)
        held += first
        tuning += second
    return held, tuning


def _docsets(ctx: Context) -> list[DocSet]:
    if not ctx.sizes.real_docs:
        return [KB]
    for docset in (GIT_DOC, PG_DOC):
        if not docset.installed:
            raise RunFailed(docset.missing())
    return [GIT_DOC, PG_DOC]


def run(ctx: Context) -> list[Row]:
    from gateway.config import load_default_config
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.select import select
    from gateway.observe.retrieval import judge

    settings = load_default_config().articles
    floor, budget = settings.min_relevance, settings.max_tokens
    rows: list[Row] = []
    for docset in _docsets(ctx):
        folder = ctx.folder(f"handoff-{docset.name.replace('/', '-')}")
        copy_pages(docset.folder, folder, docset.suffixes)
        checked_questions(docset, folder)  # raises when the evidence left its page
        index = open_centre(
            [folder], limits=ArticleCaps(), cache_dir=lambda: ctx.folder("handoff-cache"),
            whole=budget is None, warn=lambda _: None, keep=docset is not KB,
        )  # fmt: skip
        held, tuning = _golden(docset)
        select(held[0].text, index, budget)  # warm: the page cache, the database's first read
        halves = [Half("held-out", tuple(judge(q, index, budget) for q in held)),
                  Half("tuning", tuple(judge(q, index, budget) for q in tuning))]  # fmt: skip
        both = Half("all", halves[0].judged + halves[1].judged)
        group = f"13 handoff, {docset.name}"
        for half in (*halves, both):
            rows += _figures(group, half, floor)
        rows += _sweep_rows(group, both)
        rows += _costs(group, [q.text for q in held + tuning], index, budget)
        _report(docset, both, floor)
        close = getattr(index, "close", None)
        if callable(close):
            close()
        handed = [j.question.text for j in both.judged if j.handed_off(floor)]
        answered = sorted((j for j in both.judged if j.question.answerable),
                          key=lambda j: -j.relevance.score)  # fmt: skip
        if handed and answered:
            rows += _process_costs(ctx, group, folder, handed[0],
                                   [j.question.text for j in answered[:5]])  # fmt: skip
    return rows


LOCAL_ONLY = """\
product: Acme Cloud
deployments:
  - {name: local, provider: local, context_window: 1000000}
"""


def _process_costs(
    ctx: Context, group: str, folder: Path, uncovered: str, covered: Sequence[str]
) -> list[Row]:
    """A fresh process handing `uncovered` off, against the same process answering a
    question offline (the first of `covered` the offline deployment answers), and against
    it answering the same `uncovered` question offline with the floor off (the offline
    deployment hands off at the team's floor, so with 0 it answers); interleaved, warm."""
    work = ctx.folder(f"handoff-proc-{folder.name}")
    home = ctx.folder(f"handoff-proc-home-{folder.name}")
    env = child_env(home)
    floor_off = work / "floor-off.yaml"
    floor_off.write_text(LOCAL_ONLY + "articles:\n  min_relevance: 0\n")
    default = work / "default.yaml"
    default.write_text(LOCAL_ONLY)

    def argv(question: str, config: Path) -> list[str]:
        return [*ctx.support_ask, question, "-q", "--config", str(config), "--no-log",
                "--state", str(work / "state.json"), "--articles", str(folder)]  # fmt: skip

    answers = (q for q in covered if run_once(argv(q, default), env=env, cwd=home).code == 0)
    answering = next(answers, None)
    if answering is None:
        raise RunFailed("the offline deployment answered none of the best-covered questions")
    handoff = Command("handoff (not_covered, exit 5)", argv(uncovered, default), code=5)
    offline = Command("offline answer", argv(answering, default))
    asked = Command("same question answered offline", argv(uncovered, floor_off))
    runs = interleave([handoff, offline, asked], rounds=ctx.sizes.kb_rounds,
                      warmup=ctx.sizes.proc_warmup + 1, env=env, cwd=home)  # fmt: skip

    def of(name: str, field: str) -> Summary:
        return Summary.of([getattr(r, field) for r in runs[name]])

    h, o, a = handoff.name, offline.name, asked.name
    return [
        Row(group, f"{h}, fresh process", Unit.MILLIS, of(h, "wall"), of(o, "wall"), o,
            COST_TARGET),
        Row(group, f"{h}, fresh process CPU", Unit.MILLIS, of(h, "cpu"), of(o, "cpu"), o + " CPU"),
        Row(group, f"{h}, fresh process", Unit.MILLIS, of(h, "wall"), of(a, "wall"),
            a + " (floor off)"),
    ]  # fmt: skip


def _figures(group: str, half: Half, floor: float) -> list[Row]:
    from gateway.observe.retrieval import totals

    at = totals(half.judged, floor)
    none = totals(half.judged, 0.0)
    label = f"{half.name} ({at.answerable} answerable, {at.unanswerable} not), floor {floor:g}"
    return [
        Row(group, f"handoff recall, {label}", Unit.PERCENT, value=at.handoff_recall,
            target=HANDOFF_TARGET, note=f"{at.handed_off}/{at.unanswerable}"),
        Row(group, f"false handoffs, {label}", Unit.PERCENT, value=at.false_handoff_rate,
            target=FALSE_TARGET, note=f"{at.false_handoffs}/{at.answerable}"),
        Row(group, f"answering-article recall, {label}", Unit.PERCENT, value=at.recall,
            base_value=none.recall, base_name="no floor (today)", target=RECALL_TARGET,
            note=f"{at.found}/{at.answerable}"),
    ]  # fmt: skip


def _sweep_rows(group: str, both: Half) -> list[Row]:
    from gateway.observe.retrieval import totals

    rows = []
    for floor in SHOWN:
        at = totals(both.judged, floor)
        note = (f"false handoffs {at.false_handoff_rate:.1%}, answering-article recall "
                f"{at.recall:.1%}")  # fmt: skip
        rows.append(Row(group, f"sweep: handoff recall at floor {floor:g}", Unit.PERCENT,
                        value=at.handoff_recall, note=note))  # fmt: skip
    return rows


def _costs(group: str, texts: Sequence[str], index: Index, budget: int | None) -> list[Row]:
    """Seconds per question: the selection, then the relevance decision on it."""
    from gateway.knowledge.relevance import relevance
    from gateway.knowledge.select import select

    chose: list[float] = []
    decided: list[float] = []
    clock = time.perf_counter
    for text in texts:
        t0 = clock()
        selection = select(text, index, budget)
        t1 = clock()
        relevance(text, selection.sources, index)
        decided.append(clock() - t1)
        chose.append(t1 - t0)
    return [Row(group, "relevance decision per question, in-process", Unit.MILLIS,
                Summary.of(decided), Summary.of(chose), "the selection it reads")]  # fmt: skip


def _report(docset: DocSet, both: Half, floor: float) -> None:
    """The whole sweep, and the questions each side gets wrong at the default floor, on
    stderr: what to look at."""
    from gateway.observe.retrieval import sweep

    print(f"#   {docset.name}: floor, handoff recall, false handoffs, recall", file=sys.stderr)
    for at in sweep(both.judged, also=(floor,)):
        figures = (at.handoff_recall, at.false_handoff_rate, at.recall)
        shown = "  ".join(f"{share or 0:6.1%}" for share in figures)
        print(f"#     {at.floor:.2f}  {shown}", file=sys.stderr)
    for j in both.judged:
        if j.question.answerable == j.handed_off(floor):
            what = "false handoff" if j.question.answerable else "not handed off"
            print(f"#   {what} ({j.relevance.score:.2f}): {j.question.text}", file=sys.stderr)
