"""13. Masking personal data before any provider call: recall and false positives on
realistic customer messages (bench/messages-privacy.txt: e-mail addresses, phones in
seven countries' forms, cards, IBANs, next to order numbers, dates, amounts and prices),
the cost of one pass over a chat-sized message against the words the help centre is
searched for (`query_terms`, which every question already pays), and the import.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from bench.context import Context
from bench.stats import Measure, Row, Summary, Target, Unit, paired

GROUP = "13 masking"
MESSAGES = Path(__file__).with_name("messages-privacy.txt")
_MARK = re.compile(r"\{(email|phone|card|iban):(.*?)\}")


def messages() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each message as the customer wrote it, and the values in it that must be masked."""
    out = []
    for line in MESSAGES.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        expected = [(m.group(1), m.group(2)) for m in _MARK.finditer(line)]
        out.append((_MARK.sub(lambda m: m.group(2), line), expected))
    return out


def score() -> tuple[int, int, int, list[str]]:
    """(values expected, values masked exactly, spans masked that were not personal data),
    and a line per miss for the report."""
    from gateway.answers.masking import Masker

    masker = Masker()
    expected_total = found = false = 0
    misses = []
    for text, expected in messages():
        spans = {(s.label.lower(), text[s.start : s.end]) for s in masker.find(text)}
        wanted = set(expected)
        expected_total += len(expected)
        hits = sum(1 for e in expected if e in spans)
        found += hits
        extra = spans - wanted
        false += len(extra)
        if hits < len(expected) or extra:
            misses.append(f"{text[:70]!r}: missed {sorted(wanted - spans)}, extra {sorted(extra)}")
    return expected_total, found, false, misses


def _cost(ctx: Context) -> Row:
    from gateway.answers.masking import Masker
    from gateway.knowledge.terms import query_terms

    masker = Masker()
    chat = " ".join(text for text, _ in messages()[:3])  # ~300 characters, three values
    cand, base = paired(
        lambda: masker.mask([chat]),
        lambda: query_terms(chat),
        max(50, ctx.sizes.engine_iterations // 10),
    )
    return Row(
        GROUP,
        f"mask one chat message ({len(chat)} chars, 3 values)",
        Unit.MICROS,
        cand,
        base,
        "query_terms of the same message",
        Target.at_most(Measure.MEDIAN, 250e-6, "<= 250 us a message"),
    )


def _import(ctx: Context) -> Row:
    """The module's own import (`-X importtime`, cumulative), against gateway.model's."""

    # As installed: with bytecode written (a test environment may turn that off).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def imported(module: str) -> float:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import gateway.model, {module}"],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        for line in done.stderr.splitlines():
            if line.rstrip().endswith(f"| {module}"):
                return int(line.split("|")[1]) * 1e-6
        raise RuntimeError(f"{module} not in -X importtime's report")

    rounds = max(3, ctx.sizes.proc_rounds // 2)
    imported("gateway.answers.masking")  # writes the bytecode
    cand = [imported("gateway.answers.masking") for _ in range(rounds)]
    base = [imported("gateway.model") for _ in range(rounds)]
    return Row(
        GROUP,
        "import the masking (cumulative, -X importtime)",
        Unit.MILLIS,
        Summary.of(cand),
        Summary.of(base),
        "gateway.model, imported by every run",
        Target.at_most(Measure.RATIO, 1.0, "<= gateway.model's"),
    )


def run(ctx: Context) -> list[Row]:
    total, found, false, misses = score()
    for miss in misses:
        print(f"  masking miss: {miss}", file=sys.stderr)
    checked = len(messages())
    return [
        Row(
            GROUP,
            f"recall: values masked of {total} in {checked} messages",
            Unit.PERCENT,
            value=found / total,
            target=Target.at_least(">= 95%", (Measure.TOTAL, 0.95)),
        ),
        Row(
            GROUP,
            "false positives: spans masked that were no personal data",
            Unit.COUNT,
            value=float(false),
            target=Target.at_most(Measure.TOTAL, 2, "<= 2"),
        ),
        _cost(ctx),
        _import(ctx),
    ]
