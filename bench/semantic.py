"""22. Would a semantic model shipped in its wheel lift the ranker's first choice or the
handoff? Measured, so the answer is a figure and not a guess.

The offline answer's bound (benchmark 16) is the ranker's first choice: the prompt holds an
answering page for most questions, but the best-scored passage is on one for few. The
handoff's bound (benchmark 13) is the relevance floor: a share of the question's idf weight
cannot tell "how do I open a pull request on GitHub?" (git's manual holds every word) from
a question the manual answers. Both need a judgement of meaning. Nothing may be fetched at
run time here, so the candidate must ship its weights inside its wheel: WordLlama (MIT,
`pip install wordllama`; a 256-dimension static token embedding, 16 MB, in the wheel) is
the one such model found. It is not a dependency of the tool; without it this benchmark
says so and measures nothing.

Over git's and PostgreSQL's manuals and their question files (answering pages, and the
unanswerable questions of benchmark 13), each question gets the selection `ask` makes at
the default budget. Then, per half (the first half of each list held out, as elsewhere):

- **first choice from an answering page**: the answerable questions whose chosen passage
  is on an answering page, choosing by the ranker's score (today), by the embedding's
  cosine with the question, and by both (z-scores over the prompt's passages, summed);
- **handoff at <= 5 % false**: each signal's floor is set on the tuning half (the highest
  floor handing off at most 5 % of its answerable questions), then applied to the held-out
  half: handoff recall and false handoffs there. Signals: the relevance floor's coverage
  (today's), the best passage's cosine, and their z-scored sum.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.context import Context
from bench.docsets import (
    GIT_DOC,
    PG_DOC,
    QUESTIONS,
    DocSet,
    copy_pages,
    halves,
    load_questions,
)
from bench.procs import RunFailed
from bench.stats import Measure, Row, Target, Unit

GROUP = "22 semantic"
ANSWERING_TARGET = Target.at_least(">= 80%", (Measure.TOTAL, 0.80))
HANDOFF_TARGET = Target.at_least(">= 90%", (Measure.TOTAL, 0.90))
FALSE_TARGET = Target.at_most(Measure.TOTAL, 0.05, "<= 5%")
MOST_FALSE = 0.05


@dataclass(frozen=True)
class Judged:
    """One question's prompt as the three choices see it."""

    answerable: bool
    held: bool
    by_score: bool  # the best-scored passage is on an answering page
    by_cosine: bool
    by_both: bool
    coverage: float  # the relevance floor's figure
    cosine: float  # the best passage's cosine with the question


def _model() -> Callable[[list[str]], Any]:
    """The shipped model's embedder, unit vectors. Its own `WordLlama.load()` looks for the
    tokenizer under another folder name than its wheel installs and then downloads it, so
    the two shipped files are loaded with the package's classes directly."""
    from importlib.resources import files

    from safetensors import safe_open
    from wordllama.inference import WordLlamaInference
    from wordllama.wordllama import WordLlama

    root = Path(str(files("wordllama")))
    tokenizer = WordLlama.load_tokenizer(root / "tokenizers" / "l2_supercat_tokenizer_config.json")
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), "np") as weights:
        table = weights.get_tensor("embedding.weight")
    model = WordLlamaInference(table, tokenizer)
    return lambda texts: model.embed(texts, norm=True)


def _judge(docset: DocSet, ctx: Context, embed: Callable[[list[str]], Any]) -> list[Judged]:
    import numpy as np

    from gateway.config import load_default_config
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps
    from gateway.knowledge.relevance import relevance
    from gateway.knowledge.select import select
    from gateway.model import PageKind

    folder = ctx.folder(f"semantic-{docset.name.replace('/', '-')}")
    copy_pages(docset.folder, folder, docset.suffixes)
    budget = load_default_config().articles.max_tokens
    index = open_centre(
        [folder], limits=ArticleCaps(), cache_dir=lambda: ctx.folder("semantic-cache"),
        whole=budget is None, warn=lambda _: None,
    )  # fmt: skip
    path = QUESTIONS[docset.name]
    unanswerable = yaml.safe_load(path.read_text()).get("unanswerable", [])
    items = []
    for group in ([(q.text, set(q.answers)) for q in load_questions(path)],
                  [(u["q"], set[str]()) for u in unanswerable]):  # fmt: skip
        held_out, tuned = halves(group)
        items += [(t, a, True) for t, a in held_out] + [(t, a, False) for t, a in tuned]

    def rel(p: str) -> str:
        return str(Path(p).relative_to(folder)) if Path(p).is_absolute() else p

    judged = []
    for text, answers, held in items:
        sel = select(text, index, budget)
        passages = [s for s in sel.sources if s.kind is PageKind.ARTICLE and s.score is not None]
        cover = relevance(text, sel.sources, index).score
        if not passages:
            judged.append(Judged(bool(answers), held, False, False, False, cover, 0.0))
            continue
        vectors = embed([text] + [f"{s.title}. {s.heading}. {s.text}" for s in passages])
        cosine = vectors[1:] @ vectors[0]
        score = np.array([s.score for s in passages])

        def z(x: Any) -> Any:
            return (x - x.mean()) / (x.std() + 1e-9)

        by_score, by_cosine, by_both = (rel(passages[int(np.argmax(x))].path) in answers
                                        for x in (score, cosine, z(score) + z(cosine)))  # fmt: skip
        judged.append(Judged(bool(answers), held, by_score, by_cosine, by_both, cover,
                             float(cosine.max())))  # fmt: skip
    return judged


def _floor(tuning: Sequence[Judged], signal: Callable[[Judged], float]) -> float:
    """The highest floor that hands off at most MOST_FALSE of the tuning half's answerable
    questions (handing off below it)."""
    answerable = sorted(signal(j) for j in tuning if j.answerable)
    return answerable[int(len(answerable) * MOST_FALSE)] if answerable else 0.0


def _rows(name: str, judged: list[Judged]) -> list[Row]:
    rows = []
    group = f"{GROUP}, {name}"
    for label, half in (("held-out", True), ("tuning", False)):
        part = [j for j in judged if j.held is half and j.answerable]
        for choice, got in (("ranker's score (today)", lambda j: j.by_score),
                            ("cosine", lambda j: j.by_cosine),
                            ("score + cosine", lambda j: j.by_both)):  # fmt: skip
            rows.append(Row(group, f"first choice on an answering page, {choice}, {label}",
                            Unit.PERCENT, value=sum(map(got, part)) / max(1, len(part)),
                            target=ANSWERING_TARGET, note=f"of {len(part)}"))  # fmt: skip
    tuning = [j for j in judged if not j.held]
    held = [j for j in judged if j.held]
    cov = [j.coverage for j in tuning]
    cos = [j.cosine for j in tuning]

    def zs(values: list[float]) -> Callable[[float], float]:
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
        return lambda v: (v - mean) / spread

    zcov, zcos = zs(cov), zs(cos)
    signals: list[tuple[str, Callable[[Judged], float]]] = [
        ("coverage (today's floor)", lambda j: j.coverage),
        ("cosine", lambda j: j.cosine),
        ("coverage + cosine", lambda j: zcov(j.coverage) + zcos(j.cosine)),
    ]
    for label, signal in signals:
        floor = _floor(tuning, signal)
        off = [j for j in held if signal(j) < floor]
        unanswerable = [j for j in held if not j.answerable]
        answerable = [j for j in held if j.answerable]
        recall = sum(not j.answerable for j in off) / max(1, len(unanswerable))
        false = sum(j.answerable for j in off) / max(1, len(answerable))
        note = f"floor {floor:.3f} set on the tuning half"
        rows.append(Row(group, f"held-out handoff recall, {label}", Unit.PERCENT, value=recall,
                        target=HANDOFF_TARGET, note=note))  # fmt: skip
        rows.append(Row(group, f"held-out false handoffs, {label}", Unit.PERCENT, value=false,
                        target=FALSE_TARGET))  # fmt: skip
    return rows


def run(ctx: Context) -> list[Row]:
    if importlib.util.find_spec("wordllama") is None:
        note = "skipped: `pip install wordllama` (not a dependency of the tool)"
        return [Row(GROUP, "a semantic model shipped in its wheel", Unit.COUNT, note=note)]
    if not ctx.sizes.real_docs:
        return [Row(GROUP, "a semantic model shipped in its wheel", Unit.COUNT,
                    note="skipped in a smoke run: it reads two real manuals")]  # fmt: skip
    for docset in (GIT_DOC, PG_DOC):
        if not docset.installed:
            raise RunFailed(docset.missing())
    embed = _model()
    rows: list[Row] = []
    for docset in (GIT_DOC, PG_DOC):
        rows += _rows(docset.name, _judge(docset, ctx, embed))
    return rows
