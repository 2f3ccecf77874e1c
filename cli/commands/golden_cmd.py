"""`support-ask eval --golden FILE`: retrieval and the relevance floor on a team's own
questions (gateway.observe.golden reads the file, gateway.observe.retrieval measures).

Every question gets the selection `ask` would send (the same help centre, budget and
floor), so what it reports is what production does. `--offline` is the only mode for
now: no deployment is asked, and a golden set of a hundred questions over a large manual
takes seconds. The thresholds make it exit 4, as every failed check of `eval` does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.observe import CHECK_FAILED

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.observe.retrieval import Thresholds


def run_golden_command(
    *,
    golden_path: Path,
    questions_path: Path | None,
    articles: tuple[Path, ...],
    config_flag: Path | None,
    max_article_tokens: str | None,
    offline: bool,
    sweep: bool,
    thresholds: Thresholds,
    as_json: bool,
    diag: Diag,
) -> int:
    import json

    from cli.runtime import wiring
    from cli.runtime.session import article_budget
    from cli.terminal.golden_view import JudgeProgress, print_report
    from cli.terminal.indexing import IndexProgress
    from gateway.observe import retrieval
    from gateway.observe.golden import GoldenError, load_golden

    if questions_path is not None:
        raise CliError(
            f"a questions file ({questions_path}) and --golden cannot go together",
            ExitCode.USAGE,
            fix="run the rules eval and the golden eval as two commands",
        )
    if not offline:
        raise CliError(
            "--golden asks no deployment yet: the answers' citation checks are not in this build",
            ExitCode.USAGE,
            fix="add --offline (retrieval and the relevance floor, no model called)",
        )
    _check_shares(thresholds)
    if not articles:
        raise CliError(
            "--golden needs the help centre its articles are in",
            ExitCode.USAGE,
            fix="pass --articles FOLDER (as for `ask`)",
        )
    try:
        questions = load_golden(golden_path)
    except GoldenError as exc:
        raise CliError(
            str(exc),
            ExitCode.NOINPUT if exc.unreadable else ExitCode.DATAERR,
            fix="each item: {question: ..., articles: [path, ...]} or "
            "{question: ..., answerable: false}; YAML, or JSON Lines (.jsonl)",
        ) from None
    config = wiring.load_settings(config_flag, environ=os.environ, notice=diag.notice)
    budget, whole = article_budget(max_article_tokens, config)
    floor = config.articles.min_relevance
    with IndexProgress(diag, silent=diag.quiet) as indexing:
        index = wiring.open_help_centre(articles, config, whole=whole, warn=diag.warn,
                                        progress=indexing)  # fmt: skip
    assert index is not None  # articles were given
    try:
        with JudgeProgress(diag, total=len(questions)) as progress:
            judged = []
            for question in questions:
                judged.append(retrieval.judge(question, index, budget))
                progress.advance()
    finally:
        index.close()
    at = retrieval.totals(judged, floor)
    swept = retrieval.sweep(judged, also=(floor,)) if sweep else ()
    missed = retrieval.failures(at, thresholds)
    if as_json:
        data: dict[str, object] = {
            "golden": str(golden_path),
            "floor": floor,
            "budget": budget,
            "offline": True,
            "questions": [j.as_json(floor) for j in judged],
            "totals": at.as_json(),
            "failures": list(missed),
            "passed": not missed,
        }
        if sweep:
            data["sweep"] = [row.as_json() for row in swept]
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        print_report(judged, at, swept)
    for failure in missed:
        diag.error(failure)
    return CHECK_FAILED if missed else ExitCode.ANSWERED


def _check_shares(thresholds: Thresholds) -> None:

    for flag, value in (
        ("--min-recall", thresholds.min_recall),
        ("--min-handoff-recall", thresholds.min_handoff_recall),
        ("--max-false-handoffs", thresholds.max_false_handoffs),
    ):
        if value is not None and not 0 <= value <= 1:
            raise CliError(
                f"{flag} {value:g} is not a share",
                ExitCode.USAGE,
                fix=f"give it from 0 to 1, e.g. {flag} 0.9",
            )
