"""`support-ask batch FILE|-`: a backlog of questions through one engine, concurrently.

The questions (JSON Lines or plain text, see gateway.batch.source) go through ONE
engine: one loaded config, one opened help centre, one state store, kept-alive
connections, cooldowns shared by every worker. Each result is a line on stdout (or
`--out FILE`): the question's `id`, then exactly the object `ask --json` prints. The
runner itself (input, resume, limiter, writer, threads) is gateway.batch; this module
wires it to the real engine, the attempt log, signals and the progress display.

Judgement calls:
- Records are written in the order questions finish, each carrying its id: waiting to
  write in input order would hold results in memory behind one slow question.
- `--out` without `--resume` replaces the file, as a shell's `>` would; with `--resume`
  the file is appended to and the last record of an id is the one that counts.
- The exit code is the most serious outcome of any question (cli.commands.batch_ask), so a
  cron job can tell "all answered" (0) from "retry later" (75) from "look at this" (69).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from cli.commands.batch_options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EVERY_S,
    DEFAULT_POLL_S,
    STDIN,
    BatchOptions,
    output,
)
from cli.runtime.common import help_of
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.option_params import After, takes_ask_options
from cli.runtime.options import AskOptions, Command
from gateway.batch.source import Format

if TYPE_CHECKING:
    from cli.runtime.session import Session
    from cli.terminal.batch_view import LineReport, LiveBar
    from cli.terminal.diag import Diag
    from gateway.batch import BatchRunner, ItemId, Progress

# -- running ------------------------------------------------------------------------------


def run_batch(opts: BatchOptions, diag: Diag) -> int:
    from cli.runtime.session import open_session

    if opts.resume and opts.out is None:
        raise CliError(
            "--resume needs --out FILE: it reads the ids already answered from that file",
            ExitCode.USAGE,
            fix="support-ask batch questions.jsonl --out answers.jsonl --resume",
        )
    if opts.concurrency < 1:
        raise CliError("--concurrency must be at least 1", ExitCode.USAGE)
    if opts.every < 0:
        raise CliError("--progress-every must be 0 (never) or more seconds", ExitCode.USAGE)
    _check_provider_batch(opts)
    if opts.source is not None:
        _check_source(opts.source)
    from cli.runtime.wiring import forced_language

    forced_language(opts.ask.language)  # a code that cannot be one: exit 2 before any line
    if opts.status is not None:
        from cli.commands import provider_batch
        from gateway.record import replace

        batch_id = opts.status
        opts = replace(opts, ask=provider_batch.sent_with(opts, diag))
        with open_session(opts.ask, diag) as session:
            return provider_batch.collect(opts, session, batch_id)
    with open_session(opts.ask, diag) as session:
        if opts.provider_batch:
            from cli.commands import provider_batch

            return provider_batch.submit(opts, session)
        return _batch(opts, session)


def _check_provider_batch(opts: BatchOptions) -> None:
    if opts.status is None and opts.source is None:
        raise CliError(
            "batch needs a FILE of questions (or --status ID)",
            ExitCode.USAGE,
            fix="support-ask batch questions.jsonl",
        )
    if not (opts.provider_batch or opts.status is not None):
        if opts.no_fallback:
            raise CliError(
                "--no-fallback is for a provider batch",
                ExitCode.USAGE,
                fix="add --provider-batch (or --status ID)",
            )
        return
    if opts.source == STDIN:
        raise CliError(
            "a provider batch reads its questions twice (to send, then to write the "
            "records), so it cannot read them from stdin",
            ExitCode.USAGE,
            fix="save the questions to a file and pass its path",
        )
    if opts.poll_every < 0:
        raise CliError("--poll-every must be 0 (look once) or more seconds", ExitCode.USAGE)


def _check_source(source: str) -> None:
    if source == STDIN:
        return
    path = Path(source)
    if not path.exists():
        raise CliError(
            f"the questions file {source} does not exist",
            ExitCode.NOINPUT,
            fix="pass a file of questions (JSON Lines or one per line), or - for stdin",
        )
    if path.is_dir():
        raise CliError(
            f"{source} is a folder, not a file of questions",
            ExitCode.NOINPUT,
            fix="pass a file of questions (JSON Lines or one per line), or - for stdin",
        )


def _batch(opts: BatchOptions, session: Session) -> int:
    from cli.runtime import wiring

    # A bad prompt is a config error before the first question, not a record per line.
    wiring.request_for(session.config, "-", None, budget=None, product=opts.ask.product)
    # Opened (indexed, refreshed) once for every question, before the first.
    session.warn_about_articles()
    session.open_help_centre()
    return _answer(opts, session)


def _answer(opts: BatchOptions, session: Session) -> int:
    from cli.commands.batch_ask import Asker, JsonRecords
    from cli.runtime.wiring import forced_language
    from cli.terminal.diag import is_tty
    from gateway.batch import BatchRunner, Limiter, RecordWriter, prepare, read_items
    from gateway.engine import allowances
    from gateway.knowledge.shared import Shared

    diag, config, redactor = session.diag, session.config, session.redactor
    store = session.open_store()
    log = session.open_log()

    done: frozenset[ItemId] = frozenset()
    if opts.resume and opts.out is not None:
        done = prepare(opts.out, warn=diag.warn).done

    clock = session.clock
    # The shared allowance's calls at once bound the batch from its start.
    first = config.deployments[0] if config.deployments else None
    start = None if first is None else allowances.at_once(config, first)
    limiter = Limiter(opts.concurrency, clock=clock, start=start)
    engine = session.engine(store=store, on_attempt=limiter.observe)
    index = session.index
    asker = Asker(
        session,
        None if index is None else Shared(index),
        lambda request, prompts: engine.ask(request, compact=prompts),
        log,
        language=forced_language(opts.ask.language),
    )
    assert opts.source is not None  # run_batch checked it
    live = diag.animate and not (opts.out is None and is_tty(sys.stdout))
    view = _view(diag, live, opts.every)
    with _input(opts.source) as lines, output(opts.out, append=opts.resume) as out:
        total = _count_lines(opts.source)
        runner = BatchRunner(
            read_items(lines, opts.format),
            ask=asker.ask,
            records=JsonRecords(store, config, session.environ),
            writer=RecordWriter(out, scrub=redactor.scrub if redactor else None),
            limiter=limiter,
            clock=clock,
            by_fallback=asker.by_fallback,
            done=done,
            total=total,
            on_tick=view.tick,
            on_crash=asker.crashed,
        )
        with _signals(runner) as got, view:
            progress = _run(runner, opts)
        if runner.aborted:  # workers may still be using them: the exit frees them
            session.abandon()
        else:
            engine.close()

    stopped = _signal_name(got[0]) if got else None
    where = str(opts.out) if opts.out is not None else "stdout"
    from cli.terminal.batch_view import summary_line

    diag.detail(summary_line(progress, stopped=stopped, out=where, resumable=opts.out is not None))
    if log is not None:
        from cli.commands.record import warn_fallback_rate

        warn_fallback_rate(log, config, diag, now=time.time())
    if got:
        from cli.runtime.signals import exit_code_for_signal

        return exit_code_for_signal(got[0])
    if progress.done == 0 and not progress.total:
        diag.error(
            "the input holds no questions",
            fix="one question per line, or JSON Lines with a question field",
        )
        return ExitCode.NOINPUT
    if progress.invalid:
        asker.earned(ExitCode.DATAERR)
    return asker.worst()


def _run(runner: BatchRunner, opts: BatchOptions) -> Progress:
    from gateway.batch import InputError

    try:
        return runner.run()
    except InputError as exc:
        raise CliError(f"reading {opts.source} failed: {exc}", ExitCode.NOINPUT) from None
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise CliError(
            f"writing {opts.out or 'stdout'} failed: {exc.strerror or exc}",
            ExitCode.IO_ERROR,
            fix="free some space or pick another --out; then run again with --resume",
        ) from None


@contextmanager
def _input(source: str) -> Iterator[BinaryIO]:
    if source == STDIN:
        yield sys.stdin.buffer
        return
    with open(source, "rb") as f:
        yield f


def _count_lines(source: str) -> int | None:
    """Lines in a regular file (for the ETA); None for a pipe, whose end is unknown."""
    if source == STDIN or not Path(source).is_file():
        return None
    count = 0
    last = b"\n"
    with open(source, "rb") as f:
        while chunk := f.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextmanager
def _signals(runner: BatchRunner) -> Iterator[list[int]]:
    """The first Ctrl-C / SIGTERM / SIGHUP stops taking questions; the second stops
    waiting for those in flight. Yields the signals received (the first decides the exit
    code, as a shell reports it: cli.runtime.signals)."""
    got: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if got:
            runner.abort()
        else:
            got.append(signum)
            runner.stop()

    if threading.current_thread() is not threading.main_thread():
        yield got  # only the main thread may set handlers (an embedding test runner)
        return
    # `nohup` asked for SIGHUP to be ignored: keep it so.
    wanted = [s for s in _STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    saved = {s: signal.signal(s, handler) for s in wanted}
    try:
        yield got
    finally:
        for s, old in saved.items():
            signal.signal(s, old)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _view(diag: Diag, live: bool, every: float) -> LineReport | LiveBar:
    from cli.terminal.batch_view import LineReport, LiveBar

    return LiveBar(diag.console()) if live else LineReport(diag, every)


# -- the command --------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    @app.command("batch", help=help_of("batch"))
    @takes_ask_options(Command.BATCH)
    def batch(
        source: Annotated[
            str | None,
            typer.Argument(
                help='The questions: JSON Lines ({"id", "question", "product"}) or '
                "one question per line (its line number is its id); - reads stdin.",
                metavar="FILE",
                show_default=False,
            ),
        ] = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                "-o",
                metavar="FILE",
                help="Write the results here (else stdout); replaced unless --resume.",
            ),
        ] = None,
        resume: Annotated[
            bool,
            typer.Option(
                "--resume",
                help="Skip the ids already answered in --out and append the rest.",
            ),
        ] = False,
        concurrency: Annotated[
            int,
            typer.Option(
                "--concurrency",
                "-j",
                metavar="N",
                help="Questions in flight at once (fewer while a provider rate-limits).",
            ),
        ] = DEFAULT_CONCURRENCY,
        input_format: Annotated[
            Format,
            typer.Option(
                "--format",
                help="The input's format; auto: JSON Lines when the first line starts with {.",
            ),
        ] = Format.AUTO,
        every: Annotated[
            float,
            typer.Option(
                "--progress-every",
                metavar="SECONDS",
                help="Off a terminal (or with -q): a progress line this often (0: none).",
            ),
            After("quiet"),
        ] = DEFAULT_EVERY_S,
        provider_batch: Annotated[
            bool,
            typer.Option(
                "--provider-batch",
                help="Send the questions to the first deployment's provider Batch API (half "
                "price, within 24 h); print the job's id.",
            ),
        ] = False,
        status: Annotated[
            str | None,
            typer.Option(
                "--status",
                metavar="ID",
                help="Poll that provider batch job until it is over, then write its records.",
            ),
        ] = None,
        no_fallback: Annotated[
            bool,
            typer.Option(
                "--no-fallback",
                help="A provider batch's failed or expired requests are recorded as failed, "
                "not asked again through the engine.",
            ),
        ] = False,
        poll_every: Annotated[
            float,
            typer.Option(
                "--poll-every",
                metavar="SECONDS",
                help="How often --status looks at the job (0: once, exit 75 while it runs).",
            ),
        ] = DEFAULT_POLL_S,
        **options: Any,
    ) -> None:
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        ask = AskOptions.of(Command.BATCH, options)
        diag = Diag(quiet=ask.quiet)
        opts = BatchOptions(
            source=source,
            ask=ask,
            out=out,
            resume=resume,
            concurrency=concurrency,
            format=input_format,
            every=every,
            quiet=ask.quiet,
            provider_batch=provider_batch,
            status=status,
            no_fallback=no_fallback,
            poll_every=poll_every,
        )
        guarded(diag, ask.debug, lambda: run_batch(opts, diag))


__all__ = ["BatchOptions", "register", "run_batch"]
