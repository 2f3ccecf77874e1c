"""The Typer app: the root group (ask by default), its commands, and `--version`.

Imported only once `main` knows it needs Typer (anything but `--version`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli import routing
from cli.app import PROG, guarded, markup_mode, version
from cli.common import CONFIG_HELP, STATE_HELP
from cli.group import AskByDefault


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"{PROG} {version()}\n")
        raise typer.Exit(0)


# Both the root and `ask` (the default command) take it, so it works wherever it is typed.
VersionOpt = Annotated[
    bool,
    typer.Option(
        "--version", help="Print the version and exit.", callback=_version_callback, is_eager=True
    ),
]


def _lazy_commands() -> dict[str, str]:
    from importlib.util import find_spec

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


ARTICLES_HELP = "An article file or a folder of them (read recursively); repeatable."


def _register_ask(app: typer.Typer) -> None:

    @app.command("ask")
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
        articles: Annotated[
            list[Path] | None,
            typer.Option(
                "--articles", "-a", help=ARTICLES_HELP, metavar="PATH", show_default=False
            ),
        ] = None,
        config: Annotated[
            Path | None,
            typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE"),
        ] = None,
        state: Annotated[
            str | None,
            typer.Option("--state", help=STATE_HELP, metavar="FILE|URL"),
        ] = None,
        product: Annotated[
            str | None,
            typer.Option("--product", help="The product name the prompt uses.", metavar="NAME"),
        ] = None,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print one JSON object (answer, attempts).")
        ] = False,
        stream: Annotated[
            bool,
            typer.Option(
                "--stream", help="Write the answer as it arrives (JSON Lines with --json)."
            ),
        ] = False,
        allow_restart: Annotated[
            bool,
            typer.Option(
                "--allow-restart",
                help="With --stream --json: when a stream breaks after text, emit a restart "
                "event and stream the next attempt from its beginning.",
            ),
        ] = False,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="Say nothing on stderr but errors.")
        ] = False,
        show_attempts: Annotated[
            bool,
            typer.Option(
                "--show-attempts",
                help="Print the attempts table even when stderr is not a terminal.",
            ),
        ] = False,
        verbose: Annotated[
            int,
            typer.Option(
                "--verbose",
                "-v",
                count=True,
                help="Log each attempt (-vv: debug).",
                show_default=False,
            ),
        ] = 0,
        debug: Annotated[
            bool,
            typer.Option(
                "--debug",
                help="Debug and HTTP logs (keys redacted); tracebacks for internal errors.",
            ),
        ] = False,
        log: Annotated[
            Path | None,
            typer.Option(
                "--log",
                metavar="FILE",
                help="The attempt log file (else $SUPPORT_ASK_LOG, the "
                "config's log.path, the user log dir).",
            ),
        ] = None,
        no_log: Annotated[
            bool, typer.Option("--no-log", help="Do not append to the attempt log.")
        ] = False,
        deployment: Annotated[
            list[str] | None,
            typer.Option(
                "--deployment",
                "-d",
                metavar="NAME",
                help="Use only this deployment; repeatable (tried in the config's order).",
                show_default=False,
            ),
        ] = None,
        budget: Annotated[
            float | None,
            typer.Option(
                "--budget",
                metavar="SECONDS",
                help="Seconds for the whole question (else policy.budget).",
                show_default=False,
            ),
        ] = None,
        timeout: Annotated[
            float | None,
            typer.Option(
                "--timeout",
                metavar="SECONDS",
                help="Seconds for one attempt (else policy.timeout).",
                show_default=False,
            ),
        ] = None,
        show_version: VersionOpt = False,
    ) -> None:
        """Ask a question (the default command)."""
        from cli.ask import AskOptions, run_ask
        from cli.diag import Diag

        diag = Diag(quiet=quiet)
        opts = AskOptions(
            words=tuple(question or ()),
            articles=tuple(articles or ()),
            config=config,
            state=state,
            product=product,
            json=json_out,
            stream=stream,
            allow_restart=allow_restart,
            quiet=quiet,
            show_attempts=show_attempts,
            verbose=verbose,
            debug=debug,
            log=log,
            no_log=no_log,
            deployments=tuple(deployment or ()),
            budget=budget,
            timeout=timeout,
        )

        def show_help() -> None:
            # Reached by `support-ask` alone on a terminal: show the whole command's help.
            target = (
                ctx.parent if ctx.parent and ctx.meta.get("support_ask.default_command") else ctx
            )
            diag.stream.write(target.get_help() + "\n")

        guarded(diag, debug, lambda: run_ask(opts, diag, show_help=show_help))
