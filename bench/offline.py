"""16. The offline `local` deployment's answers over real manuals, against today's.

Full runs read git's manual (git-doc, bench/questions-git.yaml) and PostgreSQL 15's
(postgresql-doc-15, bench/questions-pg.yaml); smoke runs examples/kb. Each question file
holds answerable questions (with their answering pages, evidence checked first) and
unanswerable ones. The first half of each list is held out: it was not looked at while
the navigation signal, its weight and the answer's choices were made; both halves are
reported.

Every question is asked of the offline deployment in-process, as `ask` wires it (the
selection at the default budget, then `LocalProvider`), by bench/offline_worker.py run
twice in the same run: once on this tree, once on today's (main before this benchmark,
`TODAY`, extracted with `git archive`). Per half:

- **from an answering page**: answerable questions whose answer cites a page listed as
  answering it (target >= 80 %);
- **from a navigation page**: answers citing a page this tree's signal (`shape`) calls
  navigation, over every question answered (target 0);
- **handoff recall** and **false handoffs**, as benchmark 13 counts them;
- **answer words**, median, of the answers that are not handoffs;
- **time per question**, in-process (selection + answer), against today's same questions.

Then a warm question in a fresh process, `support-ask QUESTION -a SET` with no key (the
offline deployment answers, as on a new user's machine), this tree against today's,
interleaved (target <= 1.2x). Each set's pages that the signal calls navigation are
counted, and the answering pages among them named, on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from bench.context import Context
from bench.docsets import (
    GIT_DOC,
    KB,
    PG_DOC,
    QUESTIONS,
    ROOT,
    DocSet,
    checked_questions,
    copy_pages,
    halves,
    load_questions,
)
from bench.procs import Run, RunFailed, child_env, run_once
from bench.stats import Measure, Row, Summary, Target, Unit

TODAY = os.environ.get("BENCH_OFFLINE_TODAY") or "8fd7e8c"  # main before this benchmark
ANSWERING_TARGET = Target.at_least(">= 80%", (Measure.TOTAL, 0.80))
NAVIGATION_TARGET = Target.at_most(Measure.TOTAL, 0.0, "0")
HANDOFF_TARGET = Target.at_least(">= 90%", (Measure.TOTAL, 0.90))
FALSE_TARGET = Target.at_most(Measure.TOTAL, 0.05, "<= 5%")
TIME_TARGET = Target.at_most(Measure.RATIO, 1.2, "<= 1.2x today")


@dataclass(frozen=True)
class Item:
    text: str
    answers: frozenset[str]  # answering pages, relative; empty: unanswerable
    half: str  # "held-out" or "tuning"


@dataclass(frozen=True)
class Outcome:
    item: Item
    paths: tuple[str, ...]  # the pages its answer cites, relative
    handoff: bool
    words: int
    seconds: float


def _items(docset: DocSet) -> list[Item]:
    path = QUESTIONS[docset.name]
    data = yaml.safe_load(path.read_text())
    answerable = [(q.text, frozenset(q.answers)) for q in load_questions(path)]
    unanswerable = [(u["q"], frozenset[str]()) for u in data.get("unanswerable", [])]
    items = []
    for group in (answerable, unanswerable):
        held, tuning = halves(group)
        items += [Item(t, a, "held-out") for t, a in held]
        items += [Item(t, a, "tuning") for t, a in tuning]
    return items


def _docsets(ctx: Context) -> list[DocSet]:
    if not ctx.sizes.real_docs:
        return [KB]
    for docset in (GIT_DOC, PG_DOC):
        if not docset.installed:
            raise RunFailed(docset.missing())
    return [GIT_DOC, PG_DOC]


def _today(ctx: Context) -> Path | None:
    dest = ctx.folder("offline-today")
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", TODAY],
                                 capture_output=True, check=True)  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return dest


def run(ctx: Context) -> list[Row]:
    today = _today(ctx)
    if today is None:
        print(f"#   no today's tree ({TODAY} is not in this clone): this tree alone",
              file=sys.stderr)  # fmt: skip
    rows: list[Row] = []
    for docset in _docsets(ctx):
        folder = ctx.folder(f"offline-{docset.name.replace('/', '-')}")
        copy_pages(docset.folder, folder, docset.suffixes)
        checked_questions(docset, folder)  # raises when the evidence left its page
        items = _items(docset)
        navigation = _navigation_pages(folder, docset, items)
        group = f"16 offline, {docset.name}"
        # Twice each, alternating, each question's faster time kept: the load of a
        # shared machine moves between runs.
        theirs = _ask_all(ctx, folder, items, today, "today") if today else None
        mine = _ask_all(ctx, folder, items, None, "mine")
        if theirs is not None:
            theirs = _faster(theirs, _ask_all(ctx, folder, items, today, "today"))
        mine = _faster(mine, _ask_all(ctx, folder, items, None, "mine"))
        for half in ("held-out", "tuning", "all"):
            rows += _figures(group, half, mine, theirs, navigation)
        rows += _fresh(ctx, group, folder, items, today)
        _report(docset, mine, navigation)
    return rows


def _navigation_pages(folder: Path, docset: DocSet, items: Sequence[Item]) -> frozenset[str]:
    """The set's pages this tree's signal calls navigation (relative paths), counted on
    stderr with the answering pages among them."""
    from gateway.knowledge.load import read
    from gateway.model import PageKind

    pages = [p for p in folder.rglob("*") if p.is_file() and p.suffix in docset.suffixes]
    found = set()
    for page in pages:
        article, _ = read(str(page))
        if article is not None and article.kind is PageKind.NAVIGATION:
            found.add(page.relative_to(folder).as_posix())
    answering = sorted(found & {a for i in items for a in i.answers})
    print(f"#   {docset.name}: {len(found)} of {len(pages)} pages are navigation; answering "
          f"pages among them: {', '.join(answering) or 'none'}", file=sys.stderr)  # fmt: skip
    return frozenset(found)


def _ask_all(
    ctx: Context, folder: Path, items: Sequence[Item], tree: Path | None, name: str
) -> list[Outcome]:
    """Every item asked by the worker on `tree` (None: this one)."""
    work = ctx.folder(f"offline-work-{name}-{folder.name}")
    questions = work / "questions.json"
    questions.write_text(json.dumps([i.text for i in items]))
    # Run as a script: `bench` itself may come from neither tree's PYTHONPATH entry.
    env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "offline_worker.py"), str(folder),
         str(work / "cache"), str(questions)],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise RunFailed(f"the offline worker ({name}) failed: {done.stderr[-2000:]}")
    out = []
    for item, line in zip(items, done.stdout.splitlines(), strict=True):
        record: dict[str, Any] = json.loads(line)
        paths = tuple(_relative(p, folder) for p in record["paths"])
        words = 0 if record["handoff"] else len(_without_sources(record["answer"]).split())
        out.append(Outcome(item, paths, record["handoff"], words, record["seconds"]))
    return out


def _faster(first: Sequence[Outcome], second: Sequence[Outcome]) -> list[Outcome]:
    return [
        a if a.seconds <= b.seconds else replace(a, seconds=b.seconds)
        for a, b in zip(first, second, strict=True)
    ]


def _relative(path: str, folder: Path) -> str:
    try:
        return Path(path).resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return path


def _without_sources(answer: str) -> str:
    return answer.split("\nSources:", 1)[0]


@dataclass(frozen=True)
class Figures:
    answering: float | None
    navigation: float | None
    handoff_recall: float | None
    false_handoffs: float | None
    words: list[float]
    seconds: list[float]
    counts: dict[str, str]


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _tally(outcomes: Sequence[Outcome], navigation: frozenset[str]) -> Figures:
    answerable = [o for o in outcomes if o.item.answers]
    unanswerable = [o for o in outcomes if not o.item.answers]
    from_answering = sum(bool(set(o.paths) & o.item.answers) for o in answerable)
    answered = [o for o in outcomes if not o.handoff]
    from_navigation = sum(bool(set(o.paths) & navigation) for o in answered)
    handed = sum(o.handoff for o in unanswerable)
    false = sum(o.handoff for o in answerable)
    return Figures(
        _share(from_answering, len(answerable)),
        _share(from_navigation, len(answered)),
        _share(handed, len(unanswerable)),
        _share(false, len(answerable)),
        [float(o.words) for o in answered],
        [o.seconds for o in outcomes],
        {
            "answering": f"{from_answering}/{len(answerable)}",
            "navigation": f"{from_navigation}/{len(answered)}",
            "handoff": f"{handed}/{len(unanswerable)}",
            "false": f"{false}/{len(answerable)}",
        },
    )


def _figures(
    group: str,
    half: str,
    mine: Sequence[Outcome],
    theirs: Sequence[Outcome] | None,
    navigation: frozenset[str],
) -> list[Row]:
    def pick(outcomes: Sequence[Outcome]) -> list[Outcome]:
        return [o for o in outcomes if half == "all" or o.item.half == half]

    now = _tally(pick(mine), navigation)
    was = None if theirs is None else _tally(pick(theirs), navigation)
    base = "today" if was else ""

    def row(name: str, attr: str, target: Target | None, key: str) -> Row:
        note = now.counts[key] + (f"; today {was.counts[key]}" if was else "")
        return Row(group, f"{name}, {half}", Unit.PERCENT, value=getattr(now, attr),
                   base_value=getattr(was, attr) if was else None, base_name=base,
                   target=target, note=note)  # fmt: skip

    rows = [
        row("answers from an answering page", "answering", ANSWERING_TARGET, "answering"),
        row("answers from a navigation page", "navigation", NAVIGATION_TARGET, "navigation"),
        row("handoff recall", "handoff_recall", HANDOFF_TARGET, "handoff"),
        row("false handoffs", "false_handoffs", FALSE_TARGET, "false"),
    ]
    if now.words:
        rows.append(Row(group, f"answer words, {half}", Unit.COUNT, Summary.of(now.words),
                        Summary.of(was.words) if was and was.words else None, base))  # fmt: skip
    if half == "all":
        rows.append(Row(group, "selection + answer, in-process", Unit.MILLIS,
                        Summary.of(now.seconds), Summary.of(was.seconds) if was else None,
                        base, TIME_TARGET if was else None))  # fmt: skip
    return rows


def _fresh(
    ctx: Context, group: str, folder: Path, items: Sequence[Item], today: Path | None
) -> list[Row]:
    """A warm question in a fresh process with no key, this tree against today's."""
    texts = [i.text for i in items][:: max(1, len(items) // (ctx.sizes.kb_rounds or 1))]
    homes = {name: ctx.folder(f"offline-home-{name}-{folder.name}") for name in ("mine", "today")}

    def argv(text: str) -> list[str]:
        return [*ctx.support_ask, text, "--articles", str(folder)]

    def env(name: str) -> dict[str, str]:
        extra = {"PYTHONPATH": str(today if name == "today" and today else ROOT)}
        keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY")
        base = child_env(homes[name], extra)
        return {k: v for k, v in base.items() if k not in keys}

    names = ["mine", "today"] if today else ["mine"]
    for name in names:  # builds each tree's index (they differ in format), then warm
        _check(run_once(argv(texts[0]), env=env(name), cwd=homes[name]))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number, text in enumerate(texts):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            run = run_once(argv(text), env=env(name), cwd=homes[name])
            _check(run)
            samples[name].append(run.wall)
    base = Summary.of(samples["today"]) if today else None
    return [Row(group, "warm question, fresh process, no key", Unit.MILLIS,
                Summary.of(samples["mine"]), base, "today" if base else "",
                TIME_TARGET if base else None)]  # fmt: skip


def _check(run: Run) -> None:
    if run.code not in (0, 5):
        raise RunFailed(f"support-ask exited {run.code}: {run.stderr[-1500:].decode()!r}")


def _report(docset: DocSet, mine: Sequence[Outcome], navigation: frozenset[str]) -> None:
    """The answerable questions not answered from an answering page, on stderr."""
    for o in mine:
        if o.item.answers and not set(o.paths) & o.item.answers:
            what = "handed off" if o.handoff else f"from {', '.join(o.paths) or 'nothing cited'}"
            nav = " (navigation)" if set(o.paths) & navigation else ""
            print(f"#   {docset.name} {o.item.half} miss: {o.item.text} -> {what}{nav}",
                  file=sys.stderr)  # fmt: skip
