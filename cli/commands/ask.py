"""`support-ask "question"`: read the question, wire the engine, print the answer.

stdout carries only the answer (or JSON); everything else goes to stderr through Diag.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cli.commands.outcome import (
    check_restart,
    error_extra,
    report_outcome,
    retry_after_for,
    warn_invented,
)
from cli.commands.record import log_question, scrubbed, warn_fallback_rate
from cli.runtime.exitcodes import ExitCode, exit_code_for
from cli.runtime.failure import CliError
from cli.runtime.options import AskOptions
from cli.runtime.session import open_session
from cli.terminal.diag import Diag, is_tty
from gateway.model import (
    Attempt,
    FailureKind,
    QuestionError,
    Result,
    Route,
    Status,
    TextSink,
    Turn,
)
from gateway.record import record

if TYPE_CHECKING:
    from cli.runtime.session import Session
    from cli.terminal.render import AttemptsDisplay
    from gateway.answers.masking import Masked
    from gateway.config import Config
    from gateway.seams import StateStore

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


class _Stdout:
    """Whether the run's one JSON object is out: a failure after it must not add another."""

    __slots__ = ("result_written",)

    def __init__(self) -> None:
        self.result_written = False


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

    with open_session(opts, diag) as session:
        return _ask(opts, session, question, turns, out)


def _ask(
    opts: AskOptions, session: Session, question: str, turns: tuple[Turn, ...], out: _Stdout
) -> int:
    from cli.terminal.render import AttemptsDisplay
    from gateway.answers.masking import Masker, StreamUnmasker, masked_turns, unmask_result

    diag, config, redactor = session.diag, session.config, session.redactor
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
    so_far: list[Result] = []  # the engine's result when the stop came during its run
    try:
        ran = _run_engine(opts, session, masked, turns, display, sink, so_far.append)
    except KeyboardInterrupt as stop:
        # Ctrl-C, SIGTERM, SIGHUP: what was tried so far is still a question asked. Say
        # it on stdout (--json) and in the log, then let the guard name the signal.
        from cli.runtime.failure import failure_of

        failure = failure_of(stop)
        message = failure.message if failure is not None else "interrupted"
        elapsed = time.monotonic() - started
        engine_said = so_far[0] if so_far else None
        stopped = _interrupted(engine_said, display.attempts, message, elapsed, sink)
        try:
            if sink is not None:
                sink.end_line()
            if opts.json:
                _write_stdout(opts, config, unmask_result(stopped, masked)[0], sink)
                out.result_written = True
        finally:
            _log_question(session, stopped, redactor.scrub(question), scrubbed(redactor, turns))
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
        _log_question(session, ended, redactor.scrub(question), scrubbed(redactor, turns))
    return code


def _interrupted(
    so_far: Result | None,
    attempts: Sequence[Attempt],
    message: str,
    elapsed: float,
    sink: object,
) -> Result:
    """The Result of a question stopped midway, no answer: what the engine did so far (its
    attempts, the call in flight marked interrupted, the input it was sending), else (the
    stop came outside its run) the `attempts` shown."""
    from cli.terminal.output import StreamSink
    from gateway.record import replace

    error = QuestionError(FailureKind.INTERRUPTED, message)
    incomplete = isinstance(sink, StreamSink) and sink.wrote
    if so_far is not None:
        return replace(so_far, error=error, elapsed_s=elapsed, incomplete=incomplete)
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
        error=error,
        incomplete=incomplete,
        input_tokens_exact=False,
    )


@record
class _Ran:
    result: Result
    store: StateStore | None  # None: no deployment was to be asked (a `not_covered` handoff)


def _run_engine(
    opts: AskOptions,
    session: Session,
    masked: Masked,
    turns: tuple[Turn, ...],
    display: AttemptsDisplay,
    sink: TextSink | None,
    on_interrupt: Callable[[Result], None],
) -> _Ran:
    """Ask the engine, with the help centre open: a deployment with a smaller window is
    sent fewer passages, chosen from it then. `on_interrupt`: told what the engine did so
    far when the run is stopped while it asks."""
    from cli.commands import answering
    from cli.runtime import wiring
    from cli.runtime.started import process_start

    session.warn_about_articles()
    session.open_help_centre()
    config = session.config
    forced = wiring.forced_language(opts.language)
    language = wiring.reply_language(config, masked.question, turns, forced, session.diag.warn)
    prompts = session.chat_prompting(masked, turns, language=language)
    request = prompts.request()
    started = process_start()
    # A question the help centre does not cover opens no state file and no engine.
    handed = answering.uncovered(config, prompts.query, request, session.index, started=started)
    if handed is not None:
        return _Ran(handed, None)
    store = session.open_store()

    from cli.terminal.output import AnswerSink, StreamSink

    shown = None
    if isinstance(sink, StreamSink):
        shown = AnswerSink(answering.answer_stream(config, request), sink)
    with display:
        engine = session.engine(store=store, sleeper=display, on_attempt=display.add)
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
                on_interrupt=on_interrupt,
                on_send=None if shown is None else shown.sending,
            )
        finally:
            engine.close()
    if shown is not None:
        shown.finish()
    return _Ran(answering.settled(result, config, request.product, session.articles), store)


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


def _log_question(
    session: Session, result: Result, question: str, thread: Sequence[Turn] = ()
) -> None:
    """Append to the attempt log, then warn if recent traffic leans on fallbacks."""
    log = session.open_log()
    if log is None:
        return
    now = time.time()
    log_question(log, session.config, result, question, now=now, thread=thread)
    warn_fallback_rate(log, session.config, session.diag, now=now)
