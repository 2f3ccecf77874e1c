"""9. Help-centre quality: does the passage that answers a customer's question reach the
prompt, within the token budget? support-ask against plain page-level BM25.

The set is git's manual (git-doc's 242 HTML pages, 9 MB; bench/setup installs it) and the
40 questions of bench/questions-git.yaml, phrased as customers ask, each with the pages
that answer it and the words of each page's answering passage (checked against the pages
before anything is measured). Smoke runs use examples/kb and bench/questions-kb.yaml.

Each question is asked of support-ask in a fresh process, `--json`, against the loopback
deployment (bench.tool), at the default budget and at each budget of the sweep
(`--max-article-tokens`). Two recalls, each the share of questions for which it holds:

- page recall (the target's): a passage of an answering page is among the JSON's `articles`;
- evidence recall (stricter): an answering page's evidence words are in the prompt the
  server received (case, punctuation and spacing aside).

The baseline ranks whole pages with bm25s (bench.bm25) and fills the same number of
tokens as support-ask's articles took in the prompt it sent for that question (exact
cl100k counts: the system prompt's count less that of the same prompt with no article),
once with whole pages only and once cutting the last page to fit; its recalls are judged
the same two ways on the text it would send.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import selection
from bench.bm25 import PageBM25
from bench.context import Context
from bench.docsets import (
    GIT_DOC,
    KB,
    DocSet,
    Page,
    Question,
    checked_questions,
    copy_pages,
    read_pages,
)
from bench.loopback import Loopback
from bench.procs import RunFailed
from bench.stats import Measure, Row, Summary, Target, Unit
from bench.tool import Sent, Tool, Unsupported

TARGET = Target.at_least(
    ">= 90%, above page BM25", (Measure.TOTAL, 0.90), (Measure.ADDED_TOTAL, 1e-9)
)
DEFAULT = None  # no --max-article-tokens: the tool's default budget


def words(text: str) -> str:
    """Lower-case words joined by single spaces: the tool's text and the page's text
    compare equal whatever markup, punctuation or line breaks each kept."""
    return " ".join(re.findall(r"\w+", text.casefold()))


@dataclass
class Tally:
    """One candidate's outcome over the questions, at one budget."""

    page: list[bool] = field(default_factory=list)
    evidence: list[bool] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)  # articles' tokens in the prompt sent
    seconds: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # questions not answered, with why

    @staticmethod
    def share(hits: Sequence[bool]) -> float | None:
        return sum(hits) / len(hits) if hits else None


def relative(path: str, folder: Path, cwd: Path) -> str:
    """A path from the tool's JSON as a page path of the set ("" when outside it)."""
    p = Path(path)
    candidates = [p] if p.is_absolute() else [folder / p, cwd / p]
    root = folder.resolve()
    for c in candidates:
        try:
            return c.resolve().relative_to(root).as_posix()
        except (ValueError, OSError):
            continue
    return ""


def _evidence_in(text: str, question: Question) -> bool:
    sent = words(text)
    return any(words(e) in sent for e in question.answers.values())


def _docset(ctx: Context) -> DocSet:
    if not ctx.sizes.real_docs:
        return KB
    if not GIT_DOC.installed:
        raise RunFailed(GIT_DOC.missing())
    return GIT_DOC


def run(ctx: Context) -> list[Row]:
    docset = _docset(ctx)
    folder = ctx.folder("quality-docs")
    size = copy_pages(docset.folder, folder, docset.suffixes)
    pages = read_pages(folder, docset.suffixes)
    questions = checked_questions(docset, folder)
    print(f"#   {docset.name}: {size}; {len(questions)} questions", file=sys.stderr)
    baseline = _baseline(pages, required=ctx.sizes.real_docs)

    budgets: list[int | None] = [DEFAULT, *ctx.sizes.budgets]
    tool_tally = {b: Tally() for b in budgets}
    whole = {b: Tally() for b in budgets}
    cut = {b: Tally() for b in budgets}
    unsupported = ""
    overhead = _prompt_overhead()
    with Loopback() as server:
        tool = Tool(ctx.support_ask, ctx.folder("quality-tool"), server)
        with contextlib.suppress(RunFailed):  # counted below, question by question
            tool.ask(questions[0].text, folder)  # builds the index, if the tree keeps one
        for budget in budgets:
            for q in questions:
                fill_tokens = budget or 0
                try:
                    if unsupported and budget is not None:
                        raise Unsupported(unsupported)
                    sent = tool.ask(q.text, folder, budget)
                except Unsupported as e:
                    unsupported = str(e)
                except RunFailed as e:
                    tool_tally[budget].failed.append(f"{q.text}: {e.reason}")
                    tool_tally[budget].page.append(False)
                    tool_tally[budget].evidence.append(False)
                else:
                    _score(tool_tally[budget], sent, q, folder, tool.home)
                    fill_tokens = _tokens_sent(sent, overhead)
                    tool_tally[budget].exact.append(float(fill_tokens))
                for tally, is_cut in ((whole[budget], False), (cut[budget], True)):
                    if baseline is None:
                        continue
                    filled = baseline.fill(q.text, fill_tokens, cut=is_cut)
                    tally.page.append(any(p in q.answers for p in filled.pages))
                    tally.evidence.append(_evidence_in(filled.text, q))
                    tally.exact.append(filled.tokens)
                    tally.seconds.append(filled.seconds)

    group = f"9 quality, {docset.name} ({len(questions)} q)"
    rows: list[Row] = []
    for budget in budgets:
        rows += _rows(group, budget, tool_tally[budget], whole[budget], cut[budget])
        if budget is DEFAULT:
            rows += _selection(ctx, group, folder, questions, tool, baseline, tool_tally[budget])
    if unsupported:
        rows.append(Row(group, "support-ask budget sweep", Unit.COUNT,
                        note=f"skipped: this tree has no {unsupported}"))  # fmt: skip
    _report_misses(questions, tool_tally)
    return rows


def _baseline(pages: Sequence[Page], *, required: bool) -> PageBM25 | None:
    """The page BM25 baseline; None in a smoke run without bm25s (CI installs only the
    tool), a crash in a full run, where a figure without its baseline means nothing."""
    t0 = time.perf_counter()
    try:
        baseline = PageBM25(pages)
    except ImportError as e:
        if required:
            raise RunFailed(f"{e}: run bench/setup (it installs bm25s and PyStemmer)") from e
        print(f"#   no baseline ({e}): bench/setup installs it", file=sys.stderr)
        return None
    print(f"#   page BM25 indexed in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return baseline


def _prompt_overhead() -> int:
    """Exact tokens of the system prompt with no article in it (the tree's own template,
    product as in bench.question's config): subtracted from a prompt's count, it leaves
    what its articles took."""
    from gateway.tokens import count_tokens
    from prompts import load_prompt, render

    return count_tokens(render(load_prompt(None), product="Acme Cloud", articles=()))


def _tokens_sent(sent: Sent, overhead: int) -> int:
    """Exact (cl100k) tokens of the articles part of the prompt the tool sent: what the
    baseline may fill (the tool's own `tokens` in its JSON are an estimate)."""
    from gateway.tokens import count_tokens

    return max(0, count_tokens(sent.system) - overhead)


def _score(tally: Tally, sent: Sent, q: Question, folder: Path, cwd: Path) -> None:
    tally.seconds.append(sent.run.wall)
    tally.evidence.append(_evidence_in(sent.prompt, q))
    if sent.articles is not None:
        paths = {relative(str(a.get("path", "")), folder, cwd) for a in sent.articles}
        tally.page.append(bool(paths & set(q.answers)))


def _target(base: Tally | None) -> Target | None:
    """The target (`TARGET`); a baseline at 100% (a help centre that fits the budget whole)
    cannot be beaten, only matched."""
    if base is None:
        return None
    if Tally.share(base.page) == 1.0:
        return Target.at_least(">= 90%, as page BM25", (Measure.TOTAL, 0.90),
                               (Measure.ADDED_TOTAL, 0.0))  # fmt: skip
    return TARGET


def _rows(group: str, budget: int | None, tool: Tally, whole: Tally, cut: Tally) -> list[Row]:
    label = "default budget" if budget is None else f"budget {budget:,}"
    notes = []
    if tool.exact:
        notes.append(f"{Summary.of(tool.exact).median:,.0f} tokens median")
    if tool.failed:
        notes.append(f"{len(tool.failed)} not answered")
    if not tool.page:
        notes.append("no `articles` in this tree's JSON" if tool.evidence else "not run")
    # No baseline (a smoke run without bm25s): the figure alone, judged by nothing.
    bases = [("whole pages", whole), ("last page cut", cut)] if whole.page else [("", None)]
    rows = []
    for what, hits in (("page recall", "page"), ("evidence in prompt", "evidence")):
        for name, base in bases:
            rows.append(Row(
                group, f"{what}, {label}", Unit.PERCENT,
                value=Tally.share(getattr(tool, hits)),
                base_value=None if base is None else Tally.share(getattr(base, hits)),
                base_name=f"page BM25, {name}" if name else "",
                target=_target(base) if budget is None and hits == "page" else None,
                note=", ".join(notes),
            ))  # fmt: skip
    if tool.seconds:
        rows.append(Row(group, f"support-ask question, fresh process, {label}", Unit.MILLIS,
                        Summary.of(tool.seconds)))  # fmt: skip
    if cut.seconds:
        rows.append(Row(group, f"page BM25 rank + fill (in-process), {label}", Unit.MILLIS,
                        Summary.of(cut.seconds)))  # fmt: skip
    return rows


def _selection(
    ctx: Context,
    group: str,
    folder: Path,
    questions: Sequence[Question],
    tool: Tool,
    baseline: PageBM25 | None,
    tally: Tally,
) -> list[Row]:
    """The selection's cost per question in-process, at the default budget, beside the
    baseline's rank + fill of the same number of tokens."""
    if not selection.available():
        return [Row(group, "passage selection, in-process", Unit.MILLIS,
                    note="skipped: this tree has no gateway.knowledge")]  # fmt: skip
    budget = selection.default_budget(tool.config)
    fill = [int(t) for t in tally.exact] if len(tally.exact) == len(questions) else []
    fill = fill or [budget or 0] * len(questions)
    repeats = 1 if ctx.smoke else 5
    cand, base = selection.costs(folder, ctx.folder("quality-select-cache"), questions,
                                 budget, baseline, fill, repeats)  # fmt: skip
    name = f"passage selection, in-process, default budget ({budget:,} estimated tokens)"
    if base is None:
        return [Row(group, name, Unit.MILLIS, cand)]
    return [Row(group, name, Unit.MILLIS, cand, base, "page BM25 rank + fill")]


def _report_misses(questions: Sequence[Question], tallies: dict[int | None, Tally]) -> None:
    """Which questions missed at the default budget, and why questions went unanswered at
    any budget, on stderr: what to look at."""
    for q, hit in zip(questions, tallies[DEFAULT].page, strict=False):
        if not hit:
            print(f"#   missed: {q.text} (answers: {', '.join(q.answers)})", file=sys.stderr)
    for budget, tally in tallies.items():
        if tally.failed:
            label = "default budget" if budget is None else f"budget {budget:,}"
            print(f"#   {label}: {len(tally.failed)} not answered, the first: {tally.failed[0]}",
                  file=sys.stderr)  # fmt: skip
