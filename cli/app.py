"""The `support-ask` entry point and the Typer app.

`main` answers `--version` before importing Typer or rich: a version check should cost
no more than starting Python. A plain question (`support-ask "..." -a kb --json`) is
parsed by cli.fastpath without Typer, whose import and set-up would otherwise be a third
of the run; anything else (help, another command, a usage error) builds the Typer app.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import typer

    from cli.ask import AskOptions
    from cli.diag import Diag

PROG = "support-ask"


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("support-ask")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _options(args: Sequence[str]) -> Sequence[str]:
    """The arguments before `--` (after it, everything is the question's words)."""
    return args[: args.index("--")] if "--" in args else args


def _wants_version(args: Sequence[str]) -> bool:
    return "--version" in _options(args)


def main(argv: Sequence[str] | None = None, prog_name: str = PROG) -> NoReturn:
    from cli import started

    started.mark()  # the question's budget is measured from here (see cli.started)
    args = list(sys.argv[1:] if argv is None else argv)
    if _wants_version(args):
        try:
            sys.stdout.write(f"{PROG} {version()}\n")
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
            raise SystemExit(141) from None  # ExitCode.BROKEN_PIPE, without importing it
        raise SystemExit(0)
    from cli.signals import stop_on_signals

    stop_on_signals()
    from cli.fastpath import parse_ask

    opts = parse_ask(args)
    if opts is not None:
        raise SystemExit(_fast_ask(opts))
    from cli.root import build_app

    app = build_app()
    from cli.signals import exit_code_after

    if "--json" in _options(args) and _routes_to_ask(args):
        raise SystemExit(exit_code_after(_ask_with_json_usage_errors(app, args, prog_name)))
    try:
        app(args=args, prog_name=prog_name)
    except SystemExit as done:
        if isinstance(done.code, int):
            raise SystemExit(exit_code_after(done.code)) from None
        raise
    raise SystemExit(0)  # Typer exits itself in standalone mode; this is for the type checker


def _routes_to_ask(args: Sequence[str]) -> bool:
    from cli import routing

    return args[:1] == [routing.DEFAULT_COMMAND] or routing.routes_to_default(
        args, routing.command_names()
    )


def _ask_with_json_usage_errors(app: typer.Typer, args: list[str], prog_name: str) -> int:
    """`ask --json` whose command line Typer rejects (`--budget soon`, an unknown flag)
    still prints its one JSON object: Typer says what is wrong on stderr as usual, and
    stdout carries the failure in the result's shape, so `| jq .answer` reads null."""
    import typer
    import typer.main
    from typer import _click

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except _click.exceptions.ClickException as exc:
        if markup_mode() is not None:
            from typer import rich_utils

            rich_utils.rich_format_error(exc)
        else:
            exc.show()
        from cli.exitcodes import ExitCode
        from cli.failure import Failure, write_failure_json

        if exc.exit_code == ExitCode.USAGE:
            fix = f"see `{prog_name} ask --help`"
            write_failure_json(Failure(ExitCode.USAGE, exc.format_message(), fix))
        return exc.exit_code
    except typer.Abort:
        return 130  # ExitCode.INTERRUPTED: end of input or Ctrl-C while Typer parsed
    return code if isinstance(code, int) else 0


def _fast_ask(opts: AskOptions) -> int:
    """A plain question, parsed without Typer (see cli.fastpath), run exactly as `ask`."""
    from cli.ask import run_ask
    from cli.diag import Diag

    diag = Diag(quiet=opts.quiet)

    def no_help() -> None:  # the fast path never takes a call that would show help
        raise AssertionError("help on the fast path")

    return run_guarded(diag, opts.debug, lambda: run_ask(opts, diag, show_help=no_help))


def markup_mode() -> str | None:
    """Rich help and error panels on a colour terminal; plain click text everywhere else,
    so a usage error in a script's log reads as one plain line."""
    from cli.diag import Diag

    return "rich" if Diag().color and Diag(stream=sys.stdout).color else None


def guarded(diag: Diag, debug: bool, action: Callable[[], int]) -> NoReturn:
    """A Typer command's body, run through `run_guarded`; exits with its code."""
    import typer

    raise typer.Exit(run_guarded(diag, debug, action))


def run_guarded(diag: Diag, debug: bool, action: Callable[[], int]) -> int:
    """Run a command body; a user's or provider's fault becomes a message and its exit code,
    a bug becomes exit 1 (the traceback only with --debug). Never prints a key."""
    from cli.exitcodes import ExitCode

    try:
        code = int(action())
        # Inside the guard: a reader gone before the last line left is exit 141 here, not
        # "Exception ignored" and 120 when the interpreter flushes on its way out.
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more can be said on stdout, and it is not
        # a bug. Exit as a shell reports a tool that SIGPIPE ended, so `set -o pipefail`
        # scripts see the same status they see for `yes | head`.
        _silence_stdout()
        code = ExitCode.BROKEN_PIPE
    except (Exception, KeyboardInterrupt) as exc:
        from cli.failure import failure_of

        failure = failure_of(exc)
        if failure is None:
            raise
        if failure.code is ExitCode.INTERNAL and debug:
            import traceback

            traceback.print_exc(file=diag.stream)
        try:
            if failure.problems:  # every problem of the file, each with file:line: key
                for problem in failure.problems:
                    diag.error(str(problem))
            else:
                diag.error(failure.message, fix=failure.fix)
        except OSError:  # SIGHUP: the terminal may be gone; the exit code still says it
            pass
        code = failure.code
    return int(code)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
