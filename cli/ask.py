"""`support-ask "question"`: read the question, wire the engine, print the answer.

stdout carries only the answer (or JSON); everything else goes to stderr through Diag.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cli.diag import Diag, is_tty
from cli.exitcodes import ExitCode, exit_code_for
from cli.wiring import CliError
from gateway.model import FailureKind, Result, Status

if TYPE_CHECKING:
    from gateway.config import Config
    from gateway.redactor import Redactor

STDIN = "-"


@dataclass(frozen=True)
class AskOptions:
    words: tuple[str, ...] = ()
    articles: tuple[Path, ...] = ()
    config: Path | None = None
    state: str | None = None
    product: str | None = None
    json: bool = False
    stream: bool = False
    quiet: bool = False
    show_attempts: bool = False
    verbose: int = 0
    debug: bool = False
    log: Path | None = None
    no_log: bool = False
    deployments: tuple[str, ...] = ()
    budget: float | None = None
    timeout: float | None = None
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def stdin_is_tty() -> bool:
    return is_tty(sys.stdin)


def read_question(words: tuple[str, ...]) -> str | None:
    """The question from the words, from stdin (`-`, or no words and piped stdin), or None
    when there are no words and stdin is a terminal (the caller shows help)."""
    if words == (STDIN,):
        return sys.stdin.read()
    if words:
        return " ".join(words)
    if stdin_is_tty():
        return None
    return sys.stdin.read()


def _fix_for(result: Result, code: ExitCode, retry_after: float | None = None) -> str:
    kind = None if result.error is None else result.error.kind
    if code is ExitCode.TEMPFAIL:
        from cli.common import duration

        when = "later" if not retry_after else f"in {duration(retry_after)}"
        return (
            f"retry {when}; `support-ask cooldowns` shows when each deployment is back "
            "(`support-ask cooldowns reset` clears them)"
        )
    if kind is FailureKind.TOO_LARGE:
        return "ask a shorter question or pass fewer articles"
    if kind is FailureKind.INCOMPLETE:
        return "the answer above is cut short; ask again"
    if code is ExitCode.DATAERR:
        return "this request cannot succeed as sent; see the detail above"
    return "check keys and endpoints with `support-ask config check`"


def report_failure(diag: Diag, result: Result, retry_after: float | None = None) -> None:
    code = exit_code_for(result)
    fix = _fix_for(result, code, retry_after)
    if result.error is None:
        diag.error(f"the question failed ({result.status})", fix=fix)
        return
    diag.error(result.error.message)
    for d in result.error.deployments:
        diag.detail(f"  {d.name}: {d.last_error}")
    diag.detail(f"  fix: {fix}")


def report_outcome(
    diag: Diag, result: Result, config: Config, retry_after: float | None = None
) -> None:
    from cli.render import fallback_notice

    if result.status is Status.REFUSED:
        diag.notice(
            f"the model refused (deployment {result.deployment}); its reply is on stdout as is"
        )
    elif result.status is not Status.ANSWERED:
        report_failure(diag, result, retry_after)
        return
    notice = fallback_notice(result, config)
    if notice:
        diag.notice(notice)


def run_ask(opts: AskOptions, diag: Diag, *, show_help: Callable[[], None]) -> int:
    from cli import wiring

    raw = read_question(opts.words)
    if raw is None:
        show_help()
        return ExitCode.USAGE
    question = raw.strip()
    if not question:
        source = "stdin" if opts.words in ((), (STDIN,)) else "the argument"
        raise CliError(
            f"the question is empty (read from {source})",
            ExitCode.NOINPUT,
            fix='ask something: support-ask "How do I reset my password?"',
        )

    from cli.scrubbed import scrubbed_stdio
    from gateway.config.keys import check_keys
    from gateway.redactor import redactor_for

    environ = opts.environ
    config = wiring.load_settings(opts.config, environ=environ, notice=diag.notice)
    from cli import overrides

    config = overrides.apply(
        config, deployments=opts.deployments, budget=opts.budget, timeout=opts.timeout
    )
    check_keys(config, environ)  # a value that cannot be a key: exit 78 before any call
    redactor = redactor_for(config, environ)  # the run's one redactor, for every output
    with scrubbed_stdio(redactor), _logging(opts, redactor):
        return _ask(opts, diag, config, question, redactor)


def _ask(opts: AskOptions, diag: Diag, config: Config, question: str, redactor: Redactor) -> int:
    from cli import wiring

    environ = opts.environ
    if not opts.articles:
        diag.warn(
            "no --articles given: every answer will say the question is not covered "
            "(pass --articles FOLDER)"
        )
    articles = wiring.read_articles(opts.articles, warn=diag.warn)
    request = wiring.build_request(config, question, articles, product=opts.product)
    store = wiring.open_store(
        wiring.state_location(opts.state, environ=environ, config=config),
        warn=diag.warn,
        config=config,
    )

    stdout_tty = is_tty(sys.stdout)
    # A live table and streamed text on the same terminal would tear each other apart.
    live = diag.animate and not (opts.stream and stdout_tty)
    show_final = not diag.quiet and (diag.is_tty or opts.show_attempts)
    sink = None
    if opts.stream:
        from cli.output import StreamSink

        sink = StreamSink(json_lines=opts.json)

    from cli.render import AttemptsDisplay
    from gateway.clock import SystemClock

    clock = SystemClock()
    with AttemptsDisplay(diag, live=live, show_final=show_final) as display:
        engine = wiring.build_engine(
            config,
            store=store,
            clock=clock,
            sleeper=display,
            rng=clock,
            environ=environ,
            on_attempt=display.add,
            redactor=redactor,
        )
        try:
            # The engine decides when to count tokens exactly (only when a window is at
            # stake: loading the tokenizer costs more than the rest of a run); the JSON
            # says which (`input_tokens_exact`).
            result = engine.ask(request, on_text=sink)
        finally:
            engine.close()
    if sink is not None:
        sink.end_line()  # before anything else is said on the terminal
    display.print_final()

    code = exit_code_for(result)
    retry_after = None
    if code is ExitCode.TEMPFAIL:
        from cli.common import seconds_until_callable

        retry_after = seconds_until_callable(store, config, environ, time.time())
    try:
        _write_stdout(opts, result, sink, retry_after)
        report_outcome(diag, result, config, retry_after)
    finally:
        # Logged even when stdout's reader went away: the answer was paid for.
        _log_question(opts, config, result, redactor.scrub(question), diag)
    return code


def _write_stdout(
    opts: AskOptions, result: Result, sink: object, retry_after: float | None = None
) -> None:
    from cli.output import StreamSink, write_json, write_text

    streamed = isinstance(sink, StreamSink) and sink.wrote
    if isinstance(sink, StreamSink):
        sink.end_line()
    if opts.json:
        # Exit 75 says when to come back: a script can sleep that long, not guess.
        extra = None
        if exit_code_for(result) is ExitCode.TEMPFAIL:
            extra = {"retry_after_s": None if retry_after is None else round(retry_after, 1)}
        write_json(result, json_lines=opts.stream, error_extra=extra)
    elif not streamed and result.answer is not None:
        write_text(result.answer)


def _logging(opts: AskOptions, redactor: Redactor) -> AbstractContextManager[None]:
    from cli.logsetup import logging_to_stderr

    return logging_to_stderr(verbose=opts.verbose, debug=opts.debug, redactor=redactor)


def _log_question(
    opts: AskOptions, config: Config, result: Result, question: str, diag: Diag
) -> None:
    """Append to the attempt log, then warn if recent traffic leans on fallbacks."""
    from gateway.attemptlog import first_of_route, open_log

    log = open_log(
        flag=opts.log,
        no_log=opts.no_log,
        environ=opts.environ,
        settings=config.log,
        warn=diag.warn,
    )
    if log is None:
        return
    now = time.time()
    log.record(result, now=now, first=first_of_route(config, result.routed), question=question)
    if config.max_fallback_rate is not None:
        from gateway.stats import recent_fallback_warning

        warning = recent_fallback_warning(log.path, config.max_fallback_rate, now)
        if warning:
            diag.warn(warning)
