"""`support-ask "question"`: read the question, wire the engine, print the answer.

stdout carries only the answer (or JSON); everything else goes to stderr through Diag.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode, exit_code_for
from cli.runtime.options import AskOptions
from cli.runtime.wiring import CliError
from cli.terminal.diag import Diag, is_tty
from gateway.model import (
    Attempt,
    FailureKind,
    QuestionError,
    RefusedBy,
    Result,
    Route,
    Status,
    TextSink,
    Turn,
)

if TYPE_CHECKING:
    from pathlib import Path

    from cli.terminal.render import AttemptsDisplay
    from gateway.answers.masking import Masked
    from gateway.config import Config
    from gateway.knowledge.index import Index
    from gateway.observe.attemptlog import AttemptLog
    from gateway.seams import StateStore
    from gateway.secrets.redactor import Redactor

STDIN = "-"


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
        from cli.runtime.common import duration

        when = "later" if not retry_after else f"in {duration(retry_after)}"
        return (
            f"retry {when}; `support-ask cooldowns` shows when each deployment is back "
            "(`support-ask cooldowns reset` clears them)"
        )
    if kind is FailureKind.TOO_LARGE:
        return "ask a shorter question or pass fewer articles"
    if kind is FailureKind.INCOMPLETE and result.finish_reason is not None:
        return (
            f"the answer above ended early (finish_reason {result.finish_reason}): raise "
            "max_output_tokens in the config, or ask again"
        )
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
    from cli.terminal.render import fallback_notice

    if result.status is Status.REFUSED:
        refusal = result.refusal
        if refusal is not None and refusal.by is RefusedBy.PROVIDER:
            # Nothing the model wrote exists: stdout stays empty, and this says why.
            diag.notice(
                f"the provider's content filter blocked this request (deployment "
                f"{result.deployment}); nothing was answered: {refusal.message}"
            )
        else:
            diag.notice(
                f"the model refused (deployment {result.deployment}); its reply is on stdout as is"
            )
    elif result.status is not Status.ANSWERED:
        report_failure(diag, result, retry_after)
        return
    elif result.handoff is not None:
        from cli.commands.answering import handoff_notice

        diag.notice(handoff_notice(result))
    elif result.grounded is False:
        diag.warn(
            "the answer cites no passage of the help centre (grounded: false): check it "
            "before posting, or set answers.require_citation: true to hand such answers off"
        )
    notice = fallback_notice(result, config)
    if notice:
        diag.notice(notice)


@dataclass
class _Stdout:
    """Whether the run's one JSON object is out: a failure after it must not add another."""

    result_written: bool = False


def run_ask(opts: AskOptions, diag: Diag, *, show_help: Callable[[], None]) -> int:
    """Ask, and with --json print one object on stdout however the run ends: the Result,
    or (when the engine never produced one) the failure in the same shape."""
    out = _Stdout()
    try:
        return _run_ask(opts, diag, show_help, out)
    except (Exception, KeyboardInterrupt) as exc:
        if opts.json and not out.result_written:
            from cli.runtime.failure import failure_of, write_failure_json

            failure = failure_of(exc)
            if failure is not None:
                write_failure_json(failure, json_lines=opts.stream)
        raise


def check_restart(allow_restart: bool, *, stream: bool, json_lines: bool) -> None:
    """--allow-restart speaks only JSON Lines: a restart is an event a consumer reads."""
    if allow_restart and not (stream and json_lines):
        raise CliError(
            "--allow-restart needs --stream and --json: a restart is a JSON line telling "
            "the consumer to drop the text it showed",
            ExitCode.USAGE,
            fix="add --stream --json, or leave out --allow-restart",
        )


def _run_ask(opts: AskOptions, diag: Diag, show_help: Callable[[], None], out: _Stdout) -> int:
    check_restart(opts.allow_restart, stream=opts.stream, json_lines=opts.json)
    from cli.runtime.wiring import forced_language

    forced_language(opts.language)  # a code that cannot be one: exit 2 before anything
    turns: tuple[Turn, ...] = ()
    if opts.thread is not None:
        from cli.commands.ask_thread import read_chat

        chat = read_chat(opts.thread, opts.words)
        raw: str | None = chat.question
        turns = chat.turns
    else:
        raw = read_question(opts.words)
    if raw is None:
        show_help()
        if opts.json:
            from cli.runtime.failure import CommandFailure, write_failure_json

            write_failure_json(
                CommandFailure(
                    ExitCode.USAGE,
                    "no question given, and stdin is a terminal",
                    fix='support-ask "How do I reset my password?" --json',
                ),
                json_lines=opts.stream,
            )
        return ExitCode.USAGE
    question = raw.strip()
    if not question:
        source = "stdin" if opts.words in ((), (STDIN,)) else "the argument"
        raise CliError(
            f"the question is empty (read from {source})",
            ExitCode.NOINPUT,
            fix='ask something: support-ask "How do I reset my password?"',
        )

    with session(opts, diag) as (config, redactor):
        return _ask(opts, diag, config, question, turns, redactor, out)


@contextmanager
def session(opts: AskOptions, diag: Diag) -> Iterator[tuple[Config, Redactor]]:
    """What every question of a run is asked under (`ask`'s one, `batch`'s many): the
    config with the command line's overrides, its keys checked, the run's one redactor on
    stdout, stderr and the logs."""
    from cli.runtime import overrides, wiring
    from cli.terminal.scrubbed import protect
    from gateway.config.keys import check_keys
    from gateway.secrets.redactor import redactor_for

    environ = opts.environ
    config = wiring.load_settings(opts.config, environ=environ, notice=diag.notice)
    config = overrides.apply(
        config, deployments=opts.deployments, budget=opts.budget, timeout=opts.timeout
    )
    check_keys(config, environ)  # a value that cannot be a key: exit 78 before any call
    redactor = redactor_for(config, environ)  # the run's one redactor, for every output
    protect(redactor)
    with _logging(opts, redactor):
        yield config, redactor


def _ask(
    opts: AskOptions,
    diag: Diag,
    config: Config,
    question: str,
    turns: tuple[Turn, ...],
    redactor: Redactor,
    out: _Stdout,
) -> int:
    from cli.terminal.render import AttemptsDisplay
    from gateway.answers.masking import Masker, StreamUnmasker, masked_turns, unmask_result

    # Once, before anything is sent anywhere: every attempt, log line and error from here
    # on sees the placeholders only; the customer's values come back in what is printed.
    masked = Masker.of(config.privacy).mask([*(t.content for t in turns), question])
    question = masked.question
    turns = masked_turns(masked, turns)

    # An answer streamed onto the same terminal would tear a live table apart: there the
    # table is live while the engine waits, and cleared as the answer's text starts.
    until_text = opts.stream and is_tty(sys.stdout)
    show_final = not diag.quiet and (diag.is_tty or opts.show_attempts)
    display = AttemptsDisplay(diag, live=diag.animate, show_final=show_final, until_text=until_text)
    sink = None
    if opts.stream:
        from cli.terminal.output import StreamSink

        sink = StreamSink(
            json_lines=opts.json,
            before_first=display.text_starts,
            unmasker=StreamUnmasker(masked),
        )
    from cli.runtime.started import process_start

    started = process_start()
    if started is None:
        started = time.monotonic()
    try:
        ran = _run_engine(opts, diag, config, masked, turns, redactor, display, sink)
    except KeyboardInterrupt as stop:
        # Ctrl-C, SIGTERM, SIGHUP: what was tried so far is still a question asked. Say
        # it on stdout (--json) and in the log, then let the guard name the signal.
        from cli.runtime.failure import failure_of

        failure = failure_of(stop)
        message = failure.message if failure is not None else "interrupted"
        stopped = _interrupted(display.attempts, message, time.monotonic() - started, sink)
        try:
            if sink is not None:
                sink.end_line()
            if opts.json:
                _write_stdout(opts, config, unmask_result(stopped, masked)[0], sink)
                out.result_written = True
        finally:
            _log_question(
                opts, config, stopped, redactor.scrub(question), diag, scrubbed(redactor, turns)
            )
        raise
    ended, store = ran.result, ran.store
    if sink is not None:
        sink.end_line()  # before anything else is said on the terminal
    display.print_final()

    code = exit_code_for(ended)
    retry_after = retry_after_for(ended, store, config, opts.environ)
    shown, invented = unmask_result(ended, masked)
    warn_invented(diag, invented)
    try:
        _write_stdout(opts, config, shown, sink, retry_after)
        out.result_written = True
        report_outcome(diag, ended, config, retry_after)
    finally:
        # Logged even when stdout's reader went away: the answer was paid for.
        _log_question(
            opts, config, ended, redactor.scrub(question), diag, scrubbed(redactor, turns)
        )
    return code


def warn_invented(diag: Diag, invented: Sequence[str]) -> None:
    """Placeholders in the answer that stand for nothing the customer wrote."""
    if invented:
        diag.warn(
            f"the answer holds {', '.join(invented)}, which stands for nothing the customer "
            "wrote (the model made it up); it is shown as written"
        )


def _interrupted(attempts: Sequence[Attempt], message: str, elapsed: float, sink: object) -> Result:
    """The Result of a question stopped midway: its attempts so far, no answer."""
    from cli.terminal.output import StreamSink

    return Result(
        status=Status.FAILED,
        answer=None,
        deployment=None,
        provider=None,
        model=None,
        routed=Route.NORMAL,
        input_tokens=0,
        elapsed_s=elapsed,
        attempts=tuple(attempts),
        error=QuestionError(FailureKind.INTERRUPTED, message),
        incomplete=isinstance(sink, StreamSink) and sink.wrote,
        input_tokens_exact=False,
    )


@dataclass(frozen=True)
class _Ran:
    result: Result
    store: StateStore


def _run_engine(
    opts: AskOptions,
    diag: Diag,
    config: Config,
    masked: Masked,
    turns: tuple[Turn, ...],
    redactor: Redactor,
    display: AttemptsDisplay,
    sink: TextSink | None,
) -> _Ran:
    index, budget = open_help_centre(opts, config, diag)
    try:
        chat = (masked, turns)
        return _call(opts, diag, config, chat, redactor, display, sink, index, budget)
    finally:
        if index is not None:
            index.close()


def _call(
    opts: AskOptions,
    diag: Diag,
    config: Config,
    chat: tuple[Masked, tuple[Turn, ...]],
    redactor: Redactor,
    display: AttemptsDisplay,
    sink: TextSink | None,
    index: Index | None,
    budget: int | None,
) -> _Ran:
    """Ask the engine, with the help centre open: a deployment with a smaller window is
    sent fewer passages, chosen from it then."""
    from cli.commands import answering
    from cli.runtime import wiring
    from cli.runtime.started import process_start

    environ = opts.environ
    masked, turns = chat
    forced = wiring.forced_language(opts.language)
    language = wiring.reply_language(config, masked.question, turns, forced, diag.warn)
    prompts = wiring.masked_prompting(
        config, masked, turns, index, budget=budget, product=opts.product, language=language
    )
    request = prompts.request()
    store = wiring.open_store(
        wiring.state_location(opts.state, environ=environ, config=config),
        warn=diag.warn,
        config=config,
    )
    started = process_start()

    from cli.terminal.output import AnswerSink, StreamSink
    from gateway.clock import SystemClock

    shown = None
    if isinstance(sink, StreamSink):
        shown = AnswerSink(answering.answer_stream(config, request), sink)
    clock = SystemClock()
    with display:
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
            restart = shown.restart if shown is not None and opts.allow_restart else None
            result = engine.ask(
                request,
                on_text=shown,
                started=started,
                on_restart=restart,
                compact=prompts,
            )
        finally:
            engine.close()
    if shown is not None:
        shown.finish()
    return _Ran(answering.settled(result, config, request.product, opts.articles), store)


def open_help_centre(
    opts: AskOptions, config: Config, diag: Diag
) -> tuple[Index | None, int | None]:
    """The help centre every question of the run is answered from (None: no --articles,
    with a warning), its index built or refreshed now with the progress on stderr, and
    the passages' budget (None: every article whole). The caller closes the index."""
    from cli.runtime import wiring
    from cli.runtime.sample import product_warning
    from cli.terminal.indexing import IndexProgress

    paths = wiring.article_paths(opts.articles, config)
    warn_if_no_articles(paths, diag)
    misfit = product_warning(config, opts.product, paths)
    if misfit is not None:
        diag.warn(misfit)
    budget, whole = article_budget(opts.max_article_tokens, config)
    with IndexProgress(diag, silent=diag.quiet) as progress:
        index = wiring.open_help_centre(
            opts.articles, config, whole=whole, warn=diag.warn, progress=progress
        )
    return index, budget


def warn_if_no_articles(paths: Sequence[Path], diag: Diag) -> None:
    if not paths:
        diag.warn(
            "no --articles given: every answer will say the question is not covered "
            "(pass --articles FOLDER, or name it in the config's articles.paths)"
        )


ALL = "all"


def article_budget(flag: str | None, config: Config) -> tuple[int | None, bool]:
    """The passages' budget in tokens (None: no limit) and whether every article is sent
    whole (`all`), from --max-article-tokens, else the config's articles.max_tokens."""
    if flag is None:
        budget = config.articles.max_tokens
        return budget, budget is None
    value = flag.strip().lower()
    if value == ALL:
        return None, True
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise CliError(
            f"--max-article-tokens takes a whole number of tokens or `all`, not {flag!r}",
            ExitCode.USAGE,
            fix="e.g. --max-article-tokens 6000, or --max-article-tokens all",
        )
    return number, False


def _write_stdout(
    opts: AskOptions,
    config: Config,
    result: Result,
    sink: object,
    retry_after: float | None = None,
) -> None:
    from cli.terminal.output import StreamSink, write_json, write_text

    streamed = isinstance(sink, StreamSink) and sink.wrote
    if isinstance(sink, StreamSink):
        sink.end_line()
    if opts.json:
        write_json(result, json_lines=opts.stream, error_extra=error_extra(result, retry_after))
        return
    if not streamed and result.answer is not None:
        write_text(result.answer)
    from cli.commands.answering import sources_list

    sources = sources_list(result, config)
    if sources:
        write_text("\n" + sources)


def retry_after_for(
    result: Result, store: StateStore, config: Config, environ: Mapping[str, str]
) -> float | None:
    """For a question that earned exit 75: the seconds until a deployment can be called."""
    if exit_code_for(result) is not ExitCode.TEMPFAIL:
        return None
    from cli.runtime.common import seconds_until_callable

    return seconds_until_callable(store, config, environ, time.time())


def error_extra(result: Result, retry_after: float | None) -> dict[str, object] | None:
    """What `--json` adds to a failure's `error`: exit 75 says when to come back, so a
    script can sleep that long, not guess."""
    if exit_code_for(result) is not ExitCode.TEMPFAIL:
        return None
    return {"retry_after_s": None if retry_after is None else round(retry_after, 1)}


def _logging(opts: AskOptions, redactor: Redactor) -> AbstractContextManager[None]:
    from cli.runtime.logsetup import logging_to_stderr

    return logging_to_stderr(verbose=opts.verbose, debug=opts.debug, redactor=redactor)


def scrubbed(redactor: Redactor, turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """The turns with no key in them, for the log."""
    from dataclasses import replace

    return tuple(replace(t, content=redactor.scrub(t.content)) for t in turns)


def _log_question(
    opts: AskOptions,
    config: Config,
    result: Result,
    question: str,
    diag: Diag,
    thread: Sequence[Turn] = (),
) -> None:
    """Append to the attempt log, then warn if recent traffic leans on fallbacks."""
    log = open_attempt_log(opts, config, diag)
    if log is None:
        return
    now = time.time()
    log_question(log, config, result, question, now=now, thread=thread)
    warn_fallback_rate(log, config, diag, now=now)


def open_attempt_log(opts: AskOptions, config: Config, diag: Diag) -> AttemptLog | None:
    from gateway.observe.attemptlog import open_log

    return open_log(
        flag=opts.log,
        no_log=opts.no_log,
        environ=opts.environ,
        settings=config.log,
        warn=diag.warn,
    )


def log_question(
    log: AttemptLog,
    config: Config,
    result: Result,
    question: str,
    *,
    now: float,
    thread: Sequence[Turn] = (),
) -> None:
    """One question's attempts in the log (`question` and the `thread`'s turns already
    scrubbed of keys, and masked)."""
    from gateway.observe.attemptlog import first_of_route

    first = first_of_route(config, result.routed)
    log.record(result, now=now, first=first, question=question, thread=thread)


def warn_fallback_rate(log: AttemptLog, config: Config, diag: Diag, *, now: float) -> None:
    """The config's `max_fallback_rate` crossed by recent traffic: say so on stderr."""
    if config.max_fallback_rate is not None:
        from gateway.observe.stats import recent_fallback_warning

        warning = recent_fallback_warning(log.path, config.max_fallback_rate, now)
        if warning:
            diag.warn(warning)
