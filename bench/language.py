"""14. The customer's language: the detector's accuracy on short customer messages in
seven languages (bench/messages-language.txt); an offline question in a fresh process,
its language detected, against the same question with the language forced (no
detector); a plainly English question in a fresh process on the commits that brought
detection against the tree before them (`DETECTION`, each exported with `git archive`
into the scratch folder, the sides taking turns); one detection against the words the
help centre is searched for (`query_terms`, which every question already pays).

The other candidates were measured once, by hand, in a scratch environment (they are not
dependencies); their figures are in bench/RESULTS.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.context import Context
from bench.stats import Measure, Row, Summary, Target, Unit, paired
from bench.trees import exported

GROUP = "14 language"
MESSAGES = Path(__file__).with_name("messages-language.txt")
ROOT = Path(__file__).resolve().parent.parent
# The commit that brought the plainly English shortcut (on the one that brought detection)
# and the tree before detection: the other changes since are in neither.
DETECTION = ("386a331", "b3814ca^")


def messages() -> list[tuple[str, str]]:
    rows = []
    for line in MESSAGES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            code, text = line.split("\t", 1)
            rows.append((code, text.strip()))
    return rows


def _accuracy() -> list[Row]:
    from gateway.answers.language import Basis, choose, fasttext_scores

    rows = messages()
    allowed = frozenset(code for code, _ in rows)
    out = []
    for label, limit in (("any of 176 languages", frozenset[str]()), ("the 7 allowed", allowed)):
        # As a question asks it: the English shortcut, then the model; None: unsure.
        chosen = [
            choose(text, (), default="", allowed=limit, scores=fasttext_scores) for _, text in rows
        ]
        found = [None if c.basis is Basis.DEFAULT else c.code for c in chosen]
        right = sum(1 for (code, _), got in zip(rows, found, strict=True) if got == code)
        unsure = sum(1 for got in found if got is None)
        wrong = [
            f"{c}->{g}: {t}" for (c, t), g in zip(rows, found, strict=True) if g not in (c, None)
        ]
        for miss in wrong:
            print(f"  language miss ({label}): {miss}", file=sys.stderr)
        out.append(
            Row(
                GROUP,
                f"right, {len(rows)} messages of {len(allowed)} languages, {label}",
                Unit.PERCENT,
                value=right / len(rows),
                target=Target.at_least(">= 90%", (Measure.TOTAL, 0.90)),
                note=f"unsure (default used) {unsure}, wrong {len(wrong)}",
            )
        )
    return out


def _tree(ctx: Context, commit: str) -> Path:
    return exported(ctx, commit, "language")


def _question(
    ctx: Context,
    text: str,
    what: str,
    *,
    trees: tuple[Path, Path] = (ROOT, ROOT),
    flags: tuple[tuple[str, ...], tuple[str, ...]] = ((), ("--language", "en")),
    baseline: str = "the same with --language en (no detector)",
) -> Row:
    """What a question costs in a fresh process: the candidate (the first of `trees` with
    the first of `flags`) against the baseline (the second of each), turn about."""
    from bench.docsets import EXAMPLES_KB

    config = ctx.folder("language") / "config.yaml"
    config.write_text(
        "product: Acme Cloud\n"
        "deployments:\n  - {name: local, provider: local, context_window: 1000000}\n"
        "log: {enabled: false}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["SUPPORT_ASK_STATE"] = str(ctx.scratch / "language-state.json")
    question = [*ctx.support_ask, "-c", str(config), "-a", str(EXAMPLES_KB), "-q", text]

    def timed(side: int) -> float:
        began = time.perf_counter()
        # `python -m cli` in the tree's folder: that tree's code is first on sys.path.
        done = subprocess.run(
            [*question, *flags[side]], capture_output=True, env=env, cwd=trees[side]
        )
        # The offline deployment hands a German question over English articles off (exit
        # 5): an ending as complete as an answer, and the one whose cost is measured here.
        if done.returncode not in (0, 5):
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )
        return time.perf_counter() - began

    for _ in range(ctx.sizes.proc_warmup):
        timed(0)
        timed(1)
    taken: tuple[list[float], list[float]] = ([], [])
    for i in range(ctx.sizes.proc_rounds):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            taken[side].append(timed(side))
    return Row(
        GROUP,
        f"offline question, fresh process, {what}",
        Unit.MILLIS,
        Summary.of(taken[0]),
        Summary.of(taken[1]),
        baseline,
        Target.at_most(Measure.RATIO, 1.25, "<= 1.25x"),
    )


def _before_detection(ctx: Context, text: str) -> Row:
    """A plainly English question on the detection commits against the tree before them."""
    what = f"plainly English: detection ({DETECTION[0]}) against the tree before it"
    try:
        trees = (_tree(ctx, DETECTION[0]), _tree(ctx, DETECTION[1]))
    except (OSError, subprocess.CalledProcessError):
        # A checkout without those commits (a shallow clone): nothing to compare with.
        note = f"skipped: commit {DETECTION[1]} is not in this checkout"
        return Row(GROUP, f"offline question, fresh process, {what}", Unit.MILLIS, note=note)
    return _question(
        ctx, text, what, trees=trees, flags=((), ()), baseline=f"the same at {DETECTION[1]}"
    )


def _detect(ctx: Context) -> Row:
    from gateway.answers.language import detect, fasttext_scores
    from gateway.knowledge.terms import query_terms

    scores = fasttext_scores()
    text = "the link says it expired, how long does it last?"
    cand, base = paired(
        lambda: detect(text, scores),
        lambda: query_terms(text),
        max(50, ctx.sizes.engine_iterations // 10),
    )
    return Row(
        GROUP,
        "detect one message, model loaded",
        Unit.MICROS,
        cand,
        base,
        "query_terms of the same message",
        Target.at_most(Measure.MEDIAN, 500e-6, "<= 500 us"),
    )


def run(ctx: Context) -> list[Row]:
    german = "Wie lange ist der Link zum Zurücksetzen meines Passworts gültig?"
    english = "How long is the link to reset my password valid?"
    return [
        *_accuracy(),
        _question(ctx, german, "German: the detector loaded"),
        _question(ctx, english, "plainly English: no detector"),
        _before_detection(ctx, english),
        _detect(ctx),
    ]
