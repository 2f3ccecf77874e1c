"""The `support-ask` entry point and the Typer app.

`main` answers `--version` before importing Typer or rich: a version check should cost
no more than starting Python. Everything else builds the app (commands register in their
own modules) and lets Typer parse.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from cli.diag import Diag

PROG = "support-ask"


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("support-ask")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _wants_version(args: Sequence[str]) -> bool:
    options = args[: args.index("--")] if "--" in args else args
    return "--version" in options


def main(argv: Sequence[str] | None = None, prog_name: str = PROG) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    if _wants_version(args):
        sys.stdout.write(f"{PROG} {version()}\n")
        raise SystemExit(0)
    from cli.root import build_app

    app = build_app()
    app(args=args, prog_name=prog_name)
    raise SystemExit(0)  # Typer exits itself in standalone mode; this is for the type checker


def markup_mode() -> str | None:
    """Rich help and error panels on a colour terminal; plain click text everywhere else,
    so a usage error in a script's log reads as one plain line."""
    from cli.diag import Diag

    return "rich" if Diag().color and Diag(stream=sys.stdout).color else None


def guarded(diag: Diag, debug: bool, action: Callable[[], int]) -> NoReturn:
    """Run a command body; a user's or provider's fault becomes a message and its exit code,
    a bug becomes exit 1 (the traceback only with --debug). Never prints a key."""
    import typer

    from cli.exitcodes import ExitCode
    from cli.wiring import CliError
    from gateway.config import ConfigError

    try:
        code = int(action())
    except CliError as exc:
        diag.error(exc.message, fix=exc.fix)
        code = exc.code
    except ConfigError as exc:
        diag.error(str(exc))
        code = ExitCode.CONFIG
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        diag.error("interrupted")
        code = 130
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more can be said on stdout.
        _silence_stdout()
        code = ExitCode.INTERNAL
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc(file=diag.stream)
        diag.error(
            f"internal error ({type(exc).__name__}: {exc})",
            fix="this is a bug in support-ask: run again with --debug for the traceback, "
            "and report it",
        )
        code = ExitCode.INTERNAL
    raise typer.Exit(int(code))


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
