"""The Typer app: the root group (ask by default), its commands, and `--version`.

Imported only once `main` knows it needs Typer (anything but `--version`).
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from typing import Annotated, Any

import typer

from cli import PROG, version
from cli.runtime.exitcodes import ExitCode
from cli.runtime.guard import guarded, markup_mode
from cli.runtime.option_params import After, takes_ask_options
from cli.runtime.options import AskOptions, Command
from cli.shell import routing
from cli.shell.group import AskByDefault


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"{PROG} {version()}\n")
        raise typer.Exit(ExitCode.OK)


# Both the root and `ask` (the default command) take it, so it works wherever it is typed.
VersionOpt = Annotated[
    bool,
    typer.Option(
        "--version", help="Print the version and exit.", callback=_version_callback, is_eager=True
    ),
]


def _lazy_commands() -> dict[str, str]:
    present: dict[str, bool] = {}
    out = {}
    for name, module in routing.LAZY_COMMANDS.items():
        if module not in present:
            present[module] = find_spec(module) is not None
        if present[module]:
            out[name] = module
    return out


def build_app() -> typer.Typer:
    mode = markup_mode()

    class SupportAsk(AskByDefault):
        lazy = _lazy_commands()
        markup = mode

    app = typer.Typer(
        cls=SupportAsk,
        name=PROG,
        help=(
            "Answer a customer-support question from help-centre articles with LLMs, "
            "failing over between deployments.\n\n"
            f'`{PROG} "question"` is short for `{PROG} ask "question"`.'
        ),
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=mode,  # type: ignore[arg-type]
        pretty_exceptions_enable=False,
        add_completion=True,
    )

    @app.callback()
    def root(
        show_version: VersionOpt = False,
    ) -> None:
        """Answer a customer-support question from help-centre articles with LLMs."""

    _register_ask(app)
    return app


def _register_ask(app: typer.Typer) -> None:
    @app.command("ask")
    @takes_ask_options(Command.ASK)
    def ask(
        ctx: typer.Context,
        question: Annotated[
            list[str] | None,
            typer.Argument(
                help="The question (several words are joined). `-` reads it from stdin; "
                "with none, piped stdin is read.",
                metavar="QUESTION",
                show_default=False,
            ),
        ] = None,
        show_version: Annotated[VersionOpt, After.ALL] = False,
        **options: Any,
    ) -> None:
        """Ask a question (the default command)."""
        from cli.commands.ask import run_ask
        from cli.terminal.diag import Diag

        opts = AskOptions.of(Command.ASK, options, words=tuple(question or ()))
        diag = Diag(quiet=opts.quiet)

        def show_help() -> None:
            # Reached by `support-ask` alone on a terminal: show the whole command's help.
            target = (
                ctx.parent if ctx.parent and ctx.meta.get("support_ask.default_command") else ctx
            )
            diag.stream.write(target.get_help() + "\n")

        guarded(diag, opts.debug, lambda: run_ask(opts, diag, show_help=show_help))
