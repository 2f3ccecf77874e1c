"""`support-ask eval`: seeing drift between deployments.

It asks every deployment each question alone (gateway.observe.evaluate) and checks the prompt's
rules; it exits 4 on any violation. `--simulate` runs it against the in-process fake
providers (gateway.simulate), as `support-ask simulate` does.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, help_of
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.observe import CHECK_FAILED
from cli.runtime.option_params import ask_option
from cli.runtime.options import AskOptions, Command
from cli.terminal.output import stdout_console

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cli.runtime.session import Session
    from cli.terminal.diag import Diag
    from gateway.config import Config, Deployment
    from gateway.engine.loop import Engine
    from gateway.observe.evaluate import Answer, EvalQuestion, EvalReport


def run_eval_command(
    *,
    questions_path: Path,
    articles: tuple[Path, ...],
    config_flag: Path | None,
    deployments: tuple[str, ...],
    product: str | None,
    as_json: bool,
    simulate: bool,
    fail: tuple[str, ...],
    diag: Diag,
    skip_unconfigured: bool = False,
    max_article_tokens: str | None = None,
) -> int:
    from cli.runtime.session import Simulation, open_session
    from gateway.observe.evaluate import QuestionsError, load_questions

    if fail and not simulate:
        raise CliError("--fail only makes sense with --simulate", ExitCode.USAGE)
    try:
        questions = load_questions(questions_path)
    except QuestionsError as exc:
        raise CliError(
            str(exc),
            ExitCode.NOINPUT,
            fix="give a text file (one question a line) or YAML: "
            "[{question: ..., covered: true|false, expect_contains: [...]}]",
        ) from None
    opts = AskOptions(
        articles=articles,
        config=config_flag,
        product=product,
        max_article_tokens=max_article_tokens,
    )
    # The fakes answer from the passages the prompt holds, so the rules are checked on
    # realistic answers.
    simulation = Simulation(faults=fail) if simulate else None
    with open_session(opts, diag, simulation=simulation) as session:
        if not session.articles:
            diag.warn("no --articles given: every question is one the articles do not cover")
        session.open_help_centre()
        return _evaluate(session, questions, deployments, as_json, skip_unconfigured)


def _evaluate(
    session: Session,
    questions: Sequence[EvalQuestion],
    deployments: tuple[str, ...],
    as_json: bool,
    skip_unconfigured: bool,
) -> int:
    import json

    from gateway.observe.evaluate import pick_deployments, run_eval
    from gateway.state.memory import MemoryStore

    config, diag = session.config, session.diag
    try:
        chosen = pick_deployments(config, deployments)
    except ValueError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None
    if skip_unconfigured:
        chosen = _configured(chosen, session.environ, diag)

    # Each question's passages, chosen once for every deployment it is asked of.
    prompting = cache(session.prompting)

    def engine_for(alone: Config) -> Engine:
        # A fresh memory store per question: eval neither honours nor records cooldowns.
        return session.engine(store=MemoryStore(), config=alone)

    progress = _Progress(diag, total=len(questions) * len(chosen))
    report = run_eval(
        config,
        questions,
        request_for=lambda question: prompting(question).request(),
        compact_for=prompting,
        engine_for=engine_for,
        deployments=chosen,
        on_answer=progress,
    )

    if as_json:
        sys.stdout.write(json.dumps(report.as_json(), ensure_ascii=False) + "\n")
    else:
        _print_eval(report)
    if not report.ran:
        raise CliError(
            "no deployment could be asked: each was skipped for every question",
            ExitCode.UNAVAILABLE,
            fix=_not_run_fix(
                report,
                keys="set the deployments' API keys (`support-ask config check` shows which), "
                "or try it offline with --simulate",
            ),
        )
    if report.violations:
        diag.error(f"{report.violations} rule violation(s); see the summary")
    if report.unasked:
        # An answer never asked for is a check that did not happen: passing it would
        # certify deployments nobody looked at.
        skipped = ", ".join(f"{name} ({n})" for name, n in report.not_run().items() if n)
        diag.error(
            f"{report.unasked} of {report.cells} answers could not be asked: {skipped}",
            fix=_not_run_fix(
                report,
                keys="set their keys (`support-ask config check` shows which), or leave them "
                "out with -d NAME or --skip-unconfigured",
            ),
        )
        return ExitCode.UNAVAILABLE
    return CHECK_FAILED if report.violations else ExitCode.ANSWERED


# The engine sends a smaller window fewer passages: too large means the prompt and the
# question alone are more than the window holds.
TOO_LARGE_FIX = (
    "their context window cannot hold the prompt and the question even with the fewest "
    "passages: check their context_window in the config, or leave them out with -d NAME"
)


def _not_run_fix(report: EvalReport, *, keys: str) -> str:
    """The fix for the answers not asked, naming their real cause: the prompt's size, or
    (`keys`) keys not set."""
    from gateway.model import FailureKind

    causes = report.not_run_causes()
    if causes == {FailureKind.TOO_LARGE}:
        return TOO_LARGE_FIX
    if FailureKind.TOO_LARGE in causes:
        return f"{TOO_LARGE_FIX}; for the others, {keys}"
    return keys


def _configured(
    chosen: Sequence[Deployment], environ: Mapping[str, str], diag: Diag
) -> tuple[Deployment, ...]:
    """--skip-unconfigured: the deployments that can be called, saying which were left out."""
    from cli.runtime.common import can_call

    kept = tuple(d for d in chosen if can_call(d, environ))
    left = [d for d in chosen if d not in kept]
    if left:
        names = ", ".join(f"{d.name} ({d.api_key_env} not set)" for d in left)
        diag.notice(f"not evaluated: {names}")
    return kept


class _Progress:
    """One stderr line per answer: a real eval makes many slow calls; show it is moving."""

    def __init__(self, diag: Diag, *, total: int) -> None:
        self.diag = diag
        self.total = total
        self.done = 0

    def __call__(self, question: EvalQuestion, answer: Answer) -> None:
        from gateway.observe.evaluate import AnswerStatus

        self.done += 1
        failed = [str(c.rule) for c in answer.checks if not c.passed]
        verdict = "ok" if not failed else "broke " + ", ".join(failed)
        if answer.status is AnswerStatus.NOT_RUN:
            verdict = f"not run ({answer.detail})" if answer.detail else "not run"
        self.diag.notice(f"[{self.done}/{self.total}] {answer.deployment}: {verdict}")


def _print_eval(report: EvalReport) -> None:
    from rich.table import Table
    from rich.text import Text

    from gateway.observe.evaluate import AnswerStatus, Rule

    console = stdout_console()
    for number, question in enumerate(report.questions, start=1):
        marks = []
        if question.question.covered is not None:
            marks.append("covered" if question.question.covered else "not covered")
        if question.question.expect_contains:
            marks.append("expects " + ", ".join(question.question.expect_contains))
        title = f"{number}. {question.question.text}" + (f"  ({'; '.join(marks)})" if marks else "")
        table = Table(title=Text(title), title_justify="left", show_lines=True, expand=True)
        table.add_column("deployment", no_wrap=True)
        table.add_column("answer", ratio=3, overflow="fold")
        table.add_column("checks", ratio=2, overflow="fold")
        for answer in question.answers:
            # Text(), never markup: an answer's [brackets] must print as written.
            shown = answer.text if answer.text is not None else f"({answer.status})"
            checks = Text()
            if answer.status is AnswerStatus.NOT_RUN:
                checks.append(f"not run: {answer.detail}", style="dim")
            elif answer.passed:
                checks.append(f"✓ {len(answer.checks)} rules", style="green")
            for check in answer.checks:
                if not check.passed:
                    line = f"✗ {check.rule}" + (f": {check.detail}" if check.detail else "")
                    checks.append(("\n" if checks else "") + line, style="red")
            table.add_row(Text(answer.deployment), Text(shown), checks)
        console.print(table)

    # Rules down, deployments across: there are few deployments and their names are short.
    summary = report.summary()
    not_run = report.not_run()
    rules = [rule for rule in Rule if any(rule in row for row in summary.values())]
    table = Table(title="summary: passed / checked", title_justify="left")
    table.add_column("rule")
    for name in summary:
        table.add_column(Text(name), justify="right")
    for rule in rules:
        cells = []
        for row in summary.values():
            tally = row.get(rule)
            if tally is None:
                cells.append(Text("-", style="dim"))
            else:
                style = "red" if tally.failed else "green"
                cells.append(Text(f"{tally.passed}/{tally.passed + tally.failed}", style=style))
        table.add_row(str(rule), *cells)
    table.add_row("not run", *(str(not_run[name]) for name in summary), style="dim")
    console.print(table)
    asked = report.cells - report.unasked
    found = f"{report.violations} violation(s)" if report.violations else "no violation"
    if not report.ran:
        verdict = "no deployment was asked"
    elif report.unasked:
        verdict = (
            f"not a pass: {report.unasked} of {report.cells} answers not asked; "
            f"{found} in the {asked} asked"
        )
    elif report.violations:
        verdict = f"{found} in {asked} answers"
    else:
        verdict = f"every rule passed in the {asked} answers checked"
    console.print(Text(f"eval: {verdict}"))


def _questions_or_usage(questions: Path | None, stray: list[str]) -> Path:
    """The questions file of a rules eval; a usage error without one, or with a flag that
    only a golden eval takes."""
    if stray:
        raise CliError(
            f"{stray[0]} only goes with --golden FILE",
            ExitCode.USAGE,
            fix="support-ask eval --golden golden.yaml --articles FOLDER --offline",
        )
    if questions is None:
        raise CliError(
            "eval needs a questions file, or --golden FILE",
            ExitCode.USAGE,
            fix="support-ask eval questions.yaml --articles FOLDER, or "
            "support-ask eval --golden golden.yaml --articles FOLDER --offline",
        )
    return questions


Product = Annotated[str | None, ask_option("product", Command.EVAL)]
MaxArticleTokens = Annotated[str | None, ask_option("max_article_tokens", Command.EVAL)]


# Its help after the summary (`common.SUMMARIES`).
_EVAL_DETAILS = """Asks each deployment every question alone (no fallback), with the same prompt,
shows the answers side by side and checks each: word limit, plain text, no AI
names, not-covered reply with a ticket. Exits 4 on any violation.

With --golden FILE: each question's selection and relevance, as ask makes them;
recall, handoff recall and false handoffs; exits 4 past a threshold. Without
--offline each question is also asked as ask asks it: its action and handoff,
whether it cites an answering article, citations dropped."""


def register(app: typer.Typer) -> None:
    @app.command("eval", help=help_of("eval", _EVAL_DETAILS))
    def eval_(
        questions: Annotated[
            Path | None,
            typer.Argument(
                help="Questions: a text file (one a line) or YAML with expectations "
                "({question, covered, expect_contains}); not with --golden.",
                show_default=False,
            ),
        ] = None,
        articles: Annotated[
            list[Path] | None,
            typer.Option(
                "--articles",
                "-a",
                help="An article file or a folder of them; repeatable.",
                show_default=False,
            ),
        ] = None,
        config: Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)] = None,
        deployment: Annotated[
            list[str] | None,
            typer.Option(
                "--deployment",
                "-d",
                metavar="NAME",
                help="Evaluate only this deployment; repeatable (default: all, "
                "long-context included).",
                show_default=False,
            ),
        ] = None,
        product: Product = None,
        max_article_tokens: MaxArticleTokens = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
        simulate: Annotated[
            bool,
            typer.Option(
                "--simulate", help="Ask in-process fake providers instead of the real ones."
            ),
        ] = False,
        fail: Annotated[
            list[str] | None,
            typer.Option(
                "--fail",
                metavar="NAME=SPEC",
                help="With --simulate: a fault, NAME=SPEC (see `simulate --help`).",
                show_default=False,
            ),
        ] = None,
        skip_unconfigured: Annotated[
            bool,
            typer.Option(
                "--skip-unconfigured",
                help="Leave out deployments whose key is not set (else they fail the eval).",
            ),
        ] = False,
        golden: Annotated[
            Path | None,
            typer.Option(
                "--golden",
                metavar="FILE",
                help="A golden set (YAML or JSON Lines: question, articles, answerable): "
                "measure retrieval and the relevance floor instead.",
                show_default=False,
            ),
        ] = None,
        offline: Annotated[
            bool,
            typer.Option(
                "--offline",
                help="With --golden: ask no deployment (retrieval and the floor only); "
                "without it each question is also asked as `ask` asks it.",
            ),
        ] = False,
        sweep: Annotated[
            bool,
            typer.Option("--sweep", help="With --golden: show what each relevance floor would do."),
        ] = False,
        min_recall: Annotated[
            float | None,
            typer.Option(
                "--min-recall",
                metavar="SHARE",
                help="With --golden: exit 4 below this share of answering articles found.",
                show_default=False,
            ),
        ] = None,
        min_handoff_recall: Annotated[
            float | None,
            typer.Option(
                "--min-handoff-recall",
                metavar="SHARE",
                help="With --golden: exit 4 below this share of unanswerable ones handed off.",
                show_default=False,
            ),
        ] = None,
        max_false_handoffs: Annotated[
            float | None,
            typer.Option(
                "--max-false-handoffs",
                metavar="SHARE",
                help="With --golden: exit 4 above this share of answerable ones handed off.",
                show_default=False,
            ),
        ] = None,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No progress or warnings on stderr.")
        ] = False,
        debug: Annotated[bool, typer.Option("--debug", help="Tracebacks for bugs.")] = False,
    ) -> None:
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag(quiet=quiet)
        if golden is not None:
            from cli.commands.golden_cmd import run_golden_command
            from gateway.observe.retrieval import Thresholds

            guarded(
                diag,
                debug,
                lambda: run_golden_command(
                    golden_path=golden,
                    questions_path=questions,
                    articles=tuple(articles or ()),
                    config_flag=config,
                    max_article_tokens=max_article_tokens,
                    offline=offline,
                    sweep=sweep,
                    thresholds=Thresholds(min_recall, min_handoff_recall, max_false_handoffs),
                    as_json=as_json,
                    diag=diag,
                    deployments=tuple(deployment or ()),
                    product=product,
                ),
            )
        golden_only = {
            "--offline": offline,
            "--sweep": sweep,
            "--min-recall": min_recall is not None,
            "--min-handoff-recall": min_handoff_recall is not None,
            "--max-false-handoffs": max_false_handoffs is not None,
        }
        stray = [flag for flag, given in golden_only.items() if given]
        guarded(
            diag,
            debug,
            lambda: run_eval_command(
                questions_path=_questions_or_usage(questions, stray),
                articles=tuple(articles or ()),
                config_flag=config,
                deployments=tuple(deployment or ()),
                product=product,
                as_json=as_json,
                simulate=simulate,
                fail=tuple(fail or ()),
                diag=diag,
                skip_unconfigured=skip_unconfigured,
                max_article_tokens=max_article_tokens,
            ),
        )
