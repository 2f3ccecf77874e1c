"""`support-ask eval --golden FILE`: retrieval and the relevance floor on a team's own
questions (gateway.observe.golden reads the file, gateway.observe.retrieval measures).

Every question gets the selection `ask` would send (the same help centre, budget and
floor), so what it reports is what production does. With `--offline` no deployment is
asked, and a golden set of a hundred questions over a large manual takes seconds.
Without it each question is also asked as `ask` asks it (gateway.observe.grounding
judges the answers: the action, the citations). The thresholds read the retrieval
figures and make it exit 4, as every failed check of `eval` does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.observe import CHECK_FAILED

if TYPE_CHECKING:
    from cli.runtime.session import Session
    from cli.terminal.diag import Diag
    from gateway.config import Config
    from gateway.knowledge.index import Index
    from gateway.observe.golden import GoldenQuestion
    from gateway.observe.grounding import Asked
    from gateway.observe.retrieval import Judged, Thresholds


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
    deployments: tuple[str, ...] = (),
    product: str | None = None,
) -> int:
    from cli.runtime.options import AskOptions
    from cli.runtime.session import open_session

    if questions_path is not None:
        raise CliError(
            f"a questions file ({questions_path}) and --golden cannot go together",
            ExitCode.USAGE,
            fix="run the rules eval and the golden eval as two commands",
        )
    _check_shares(thresholds)
    opts = AskOptions(
        articles=articles,
        config=config_flag,
        max_article_tokens=max_article_tokens,
        deployments=deployments,
        product=product,
    )
    with open_session(opts, diag) as session:
        if not session.articles:
            raise CliError(
                "--golden needs the help centre its articles are in",
                ExitCode.USAGE,
                fix="pass --articles FOLDER (as for `ask`), or name it in articles.paths",
            )
        questions = _golden_or_error(golden_path)
        index = session.open_help_centre()
        assert index is not None  # articles were named
        judged = _judged(session, questions, index)
        asked = None if offline else _asked(session, questions)
    return _report(session.config, golden_path, judged, asked, sweep, thresholds, as_json, diag,
                   budget=session.budget)  # fmt: skip


def _golden_or_error(path: Path) -> tuple[GoldenQuestion, ...]:
    from gateway.observe.golden import GoldenError, load_golden

    try:
        return load_golden(path)
    except GoldenError as exc:
        raise CliError(
            str(exc),
            ExitCode.NOINPUT if exc.unreadable else ExitCode.DATAERR,
            fix="each item: {question: ..., articles: [path, ...]} or "
            "{question: ..., answerable: false}; YAML, or JSON Lines (.jsonl)",
        ) from None


def _judged(session: Session, questions: Sequence[GoldenQuestion], index: Index) -> list[Judged]:
    """Each question's selection and relevance, as `ask` makes them, no deployment asked."""
    from cli.terminal.golden_view import JudgeProgress
    from gateway.observe import retrieval

    judged = []
    with JudgeProgress(session.diag, total=len(questions)) as progress:
        for question in questions:
            judged.append(retrieval.judge(question, index, session.budget))
            progress.advance()
    return judged


def _asked(session: Session, questions: Sequence[GoldenQuestion]) -> list[Asked]:
    """Each question asked as `ask` asks it (the not_covered handoff before any call, the
    fallback chain, the answer settled), judged against its answering articles. A fresh
    memory store: the eval neither honours nor records cooldowns, and writes no log."""
    from cli.commands.batch_ask import Asker
    from cli.terminal.golden_view import JudgeProgress
    from gateway.batch import Question
    from gateway.observe.grounding import Asked
    from gateway.state.memory import MemoryStore

    engine = session.engine(store=MemoryStore())
    asker = Asker(session, session.index, lambda r, p: engine.ask(r, compact=p), None)
    asked = []
    try:
        with JudgeProgress(session.diag, total=len(questions), what="asking") as progress:
            for question in questions:
                result = asker.ask(Question(question.line, question.line, question.text))
                asked.append(Asked.of(question, result))
                progress.advance()
    finally:
        engine.close()
    return asked


def _report(
    config: Config,
    golden_path: Path,
    judged: Sequence[Judged],
    asked: Sequence[Asked] | None,
    sweep: bool,
    thresholds: Thresholds,
    as_json: bool,
    diag: Diag,
    *,
    budget: int | None,
) -> int:
    import json

    from cli.terminal.golden_view import print_report
    from gateway.observe import retrieval
    from gateway.observe.grounding import asked_totals

    floor = config.articles.min_relevance
    at = retrieval.totals(judged, floor)
    swept = retrieval.sweep(judged, also=(floor,)) if sweep else ()
    missed = retrieval.failures(at, thresholds)
    asked_at = None if asked is None else asked_totals(asked)
    if as_json:
        items = [j.as_json(floor) for j in judged]
        if asked is not None:
            for item, one in zip(items, asked, strict=True):
                item["asked"] = one.as_json()
        data: dict[str, object] = {
            "golden": str(golden_path),
            "floor": floor,
            "budget": budget,
            "offline": asked is None,
            "questions": items,
            "totals": at.as_json(),
            "asked": None if asked_at is None else asked_at.as_json(),
            "failures": list(missed),
            "passed": not missed,
        }
        if sweep:
            data["sweep"] = [row.as_json() for row in swept]
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        print_report(judged, at, swept, asked, asked_at)
    for failure in missed:
        diag.error(failure)
    if asked_at is not None and asked_at.unanswered:
        # A question nothing answered is a measurement that did not happen: passing it
        # would certify answers nobody saw.
        diag.error(
            f"{asked_at.unanswered} of {len(judged)} questions got no answer and no handoff "
            "(a refusal, or every deployment failed)",
            fix="check keys and endpoints with `support-ask config check`, or measure "
            "retrieval alone with --offline",
        )
        return ExitCode.UNAVAILABLE
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
