"""support-ask's command line: argument parsing, rendering and exit codes.

This package's own module holds the few facts about the program that its entry point
(cli.__main__) and the Typer app (cli.shell) both need: its name, its version, and where its
options end. It imports nothing: `support-ask --version` must not pay for Typer or rich, and
each further module found and loaded costs about 0.3 M instructions (bench/RESULTS.md).
"""

from collections.abc import Sequence

PROG = "support-ask"


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("support-ask")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def options(args: Sequence[str]) -> Sequence[str]:
    """The arguments before `--` (after it, everything is the question's words)."""
    return args[: args.index("--")] if "--" in args else args
