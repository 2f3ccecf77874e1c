"""The `support-ask` entry point (the console script's and `python -m cli`'s).

`main` answers `--version` itself, importing nothing but the `cli` package: a version check
should cost no more than starting Python. Everything else is the command line of
cli.shell.app, imported only then.
"""

import sys
from collections.abc import Sequence
from typing import NoReturn

from cli import PROG, options, version


def main(argv: Sequence[str] | None = None, prog_name: str = PROG) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in options(args):
        _print_version()
    try:
        from cli.shell.app import run
    except KeyboardInterrupt as exc:
        # A Ctrl-C while the command line is imported (before `run` can take it): said as
        # any stop before a command's guard is. A failed import leaves nothing behind, so
        # the module is imported again to say it.
        from cli.shell.app import stopped

        raise SystemExit(stopped(exc, args)) from None
    run(args, prog_name)


def _print_version() -> NoReturn:
    # Not even the exit codes' enum is imported: the version costs what starting Python does.
    try:
        sys.stdout.write(f"{PROG} {version()}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        from cli.runtime.exitcodes import ExitCode
        from cli.runtime.guard import silence_stdout

        silence_stdout()
        raise SystemExit(ExitCode.BROKEN_PIPE) from None
    raise SystemExit  # exit 0, ExitCode.OK


if __name__ == "__main__":
    main()
