"""The command line once it is not `--version` (which cli.__main__, the entry point, answers
before importing this). A plain question (`support-ask "..." -a kb --json`) is
parsed by cli.shell.fastpath without Typer, whose import and set-up would otherwise be a third
of the run; anything else (help, another command, a usage error) builds the Typer app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from cli import PROG, options
from cli.runtime.guard import markup_mode, run_guarded, tell

if TYPE_CHECKING:
    import typer

    from cli.runtime.options import AskOptions


def main(argv: Sequence[str] | None = None, prog_name: str = PROG) -> NoReturn:
    """The entry point's name before it moved to cli.__main__: the `support-ask` script of
    a virtualenv installed before then still calls this, until `pip install` runs again.
    `--version` goes the Typer app's way here (root's option), slower but the same answer."""
    import sys

    run(list(sys.argv[1:] if argv is None else argv), prog_name)


def run(args: list[str], prog_name: str) -> NoReturn:
    from cli.runtime import started

    started.mark()  # the question's budget is measured from here (see cli.runtime.started)
    from cli.runtime.signals import stop_on_signals

    stop_on_signals()
    try:
        _dispatch(args, prog_name)
    except KeyboardInterrupt as exc:
        # A stop before a command's guard runs (while Typer is imported, built or parses):
        # said as the guard says it, and `ask --json` still prints its one object.
        raise SystemExit(stopped(exc, args)) from None


def _dispatch(args: list[str], prog_name: str) -> NoReturn:
    from cli.runtime.exitcodes import ExitCode
    from cli.shell.fastpath import parse_ask

    opts = parse_ask(args)
    if opts is not None:
        raise SystemExit(_fast_ask(opts))
    from cli.shell.root import build_app

    app = build_app()
    if "--json" in options(args) and _routes_to_ask(args):
        raise SystemExit(_ask_with_json_usage_errors(app, args, prog_name))
    try:
        app(args=args, prog_name=prog_name)
    except SystemExit as done:
        # Typer ends a run that a stop interrupted outside a command's guard (while it
        # parses, or before the body reaches its guard) as a silent exit 130, whichever
        # signal it was; the stop is still behind that exit, to be said as the guard would.
        stop = _stop_behind(done)
        if stop is not None:
            raise stop from None
        raise
    # Typer exits itself in standalone mode; this is for the type checker.
    raise SystemExit(ExitCode.OK)


def stopped(exc: KeyboardInterrupt, args: Sequence[str]) -> int:
    """Say a stop that came before a command's guard ran; its exit code."""
    from cli.runtime.failure import failure_of, write_failure_json
    from cli.terminal.diag import Diag

    failure = failure_of(exc)
    assert failure is not None  # every KeyboardInterrupt is one
    tell(Diag(), failure)
    if "--json" in options(args) and _routes_to_ask(args):
        write_failure_json(failure)
    return int(failure.code)


def _routes_to_ask(args: Sequence[str]) -> bool:
    from cli.shell import routing

    return args[:1] == [routing.DEFAULT_COMMAND] or routing.routes_to_default(
        args, routing.command_names()
    )


def _ask_with_json_usage_errors(app: typer.Typer, args: list[str], prog_name: str) -> int:
    """`ask --json` whose command line Typer rejects (`--budget soon`, an unknown flag)
    still prints its one JSON object: Typer says what is wrong on stderr as usual, and
    stdout carries the failure in the result's shape, so `| jq .answer` reads null."""
    import typer
    import typer.main

    from cli.runtime.exitcodes import ExitCode
    from cli.shell.typer_internals import click, show_usage_error

    command = typer.main.get_command(app)
    try:
        # Click's two steps, not `main`: its non-standalone `main` returns a stop while Typer
        # parses as a plain 130, and the stop must reach `run` to be said and printed.
        with command.make_context(prog_name, args) as ctx:
            code = command.invoke(ctx)
    except typer.Exit as done:  # --help, or a command's guard: its code
        return int(done.exit_code)
    except click.exceptions.ClickException as exc:
        show_usage_error(exc, rich=markup_mode() is not None)
        from cli.runtime.failure import CommandFailure, write_failure_json

        if exc.exit_code == ExitCode.USAGE:
            fix = f"see `{prog_name} ask --help`"
            write_failure_json(CommandFailure(ExitCode.USAGE, exc.format_message(), fix))
        return exc.exit_code
    except (EOFError, typer.Abort):
        return ExitCode.INTERRUPTED  # end of input while Typer parsed
    return code if isinstance(code, int) else ExitCode.OK


def _stop_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The stop (Ctrl-C, SIGTERM, SIGHUP) that `exc` was raised while handling, if any."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _fast_ask(opts: AskOptions) -> int:
    """A plain question, parsed without Typer (see cli.shell.fastpath), run exactly as `ask`."""
    from cli.commands.ask import run_ask
    from cli.terminal.diag import Diag

    diag = Diag(quiet=opts.quiet)

    def no_help() -> None:  # the fast path never takes a call that would show help
        raise AssertionError("help on the fast path")

    return run_guarded(diag, opts.debug, lambda: run_ask(opts, diag, show_help=no_help))
