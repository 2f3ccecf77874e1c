"""9. Help-centre quality: does the passage that answers a customer's question reach the
prompt, within the token budget? support-ask against plain page-level BM25.

The set is git's manual (git-doc's 242 HTML pages, 9 MB; bench/setup installs it) and the
40 questions of bench/questions-git.yaml, phrased as customers ask, each with the pages
that answer it and the words of each page's answering passage (checked against the pages
before anything is measured). Smoke runs use examples/kb and bench/questions-kb.yaml.

Each question is asked of support-ask in a fresh process, `--json`, against the loopback
deployment (bench.tool), at the default budget and at each budget of the sweep
(`--max-article-tokens`). Two recalls, each the share of questions for which it holds:

- page recall (the issue's): a passage of an answering page is among the JSON's `articles`;
- evidence recall (stricter): an answering page's evidence words are in the prompt the
  server received (case, punctuation and spacing aside).

The baseline ranks whole pages with bm25s (bench.bm25) and fills the same number of
tokens as support-ask sent for that question (its `articles`' tokens; the budget when the
tree does not say), once with whole pages only and once cutting the last page to fit;
its recalls are judged the same two ways on the text it would send.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.bm25 import PageBM25
from bench.context import Context
from bench.docsets import (
    GIT_DOC,
    KB,
    QUESTIONS,
    DocSet,
    Page,
    Question,
    check_evidence,
    copy_pages,
    load_questions,
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
    tokens: list[float] = field(default_factory=list)
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
    questions = load_questions(QUESTIONS[docset.name])
    problems = check_evidence(questions, {p.path: p for p in pages})
    if problems:
        raise RunFailed("the questions no longer match the pages:\n" + "\n".join(problems))
    print(f"#   {docset.name}: {size}; {len(questions)} questions", file=sys.stderr)
    baseline = _baseline(pages, required=ctx.sizes.real_docs)

    budgets: list[int | None] = [DEFAULT, *ctx.sizes.budgets]
    tool_tally = {b: Tally() for b in budgets}
    whole = {b: Tally() for b in budgets}
    cut = {b: Tally() for b in budgets}
    unsupported = ""
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
                    fill_tokens = _tokens_sent(sent, budget)
                for tally, is_cut in ((whole[budget], False), (cut[budget], True)):
                    if baseline is None:
                        continue
                    filled = baseline.fill(q.text, fill_tokens, cut=is_cut)
                    tally.page.append(any(p in q.answers for p in filled.pages))
                    tally.evidence.append(_evidence_in(filled.text, q))
                    tally.tokens.append(filled.tokens)
                    tally.seconds.append(filled.seconds)

    group = f"9 quality, {docset.name} ({len(questions)} q)"
    rows: list[Row] = []
    for budget in budgets:
        rows += _rows(group, budget, tool_tally[budget], whole[budget], cut[budget])
    if unsupported:
        rows.append(Row(group, "support-ask budget sweep", Unit.COUNT,
                        note=f"skipped: this tree has no {unsupported}"))  # fmt: skip
    _report_misses(questions, tool_tally[DEFAULT])
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


def _tokens_sent(sent: Sent, budget: int | None) -> int:
    """How many tokens the baseline may fill: what the tool says its passages took, else
    the budget, else (a tree that sends every article) the whole prompt's count."""
    if sent.tokens is not None:
        return sent.tokens
    if budget is not None:
        return budget
    from gateway.tokens import count_tokens

    return count_tokens(sent.prompt)


def _score(tally: Tally, sent: Sent, q: Question, folder: Path, cwd: Path) -> None:
    tally.seconds.append(sent.run.wall)
    tally.evidence.append(_evidence_in(sent.prompt, q))
    if sent.articles is not None:
        paths = {relative(str(a.get("path", "")), folder, cwd) for a in sent.articles}
        tally.page.append(bool(paths & set(q.answers)))
        tally.tokens.append(float(sent.tokens or 0))


def _target(base: Tally | None) -> Target | None:
    """The issue's target; a baseline at 100% (a help centre that fits the budget whole)
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
    if tool.tokens:
        notes.append(f"{Summary.of(tool.tokens).median:,.0f} tokens median")
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


def _report_misses(questions: Sequence[Question], tally: Tally) -> None:
    """Which questions missed at the default budget, on stderr: what to look at."""
    for q, hit in zip(questions, tally.page, strict=False):
        if not hit:
            print(f"#   missed: {q.text} (answers: {', '.join(q.answers)})", file=sys.stderr)
    for failure in tally.failed:
        print(f"#   not answered: {failure}", file=sys.stderr)
