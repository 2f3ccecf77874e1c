"""The Typer app: the root group (ask by default), its commands, and `--version`.

Imported only once `main` knows it needs Typer (anything but `--version`).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cli.runtime import options
from cli.runtime.guard import PROG, guarded, markup_mode, version
from cli.shell import routing
from cli.shell.group import AskByDefault


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
        articles: options.Articles = None,
        config: options.Config = None,
        state: options.State = None,
        product: options.Product = None,
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
        verbose: options.Verbose = 0,
        debug: options.Debug = False,
        log: options.Log = None,
        no_log: options.NoLog = False,
        deployment: options.Deployments = None,
        budget: options.Budget = None,
        timeout: options.Timeout = None,
        max_article_tokens: options.MaxArticleTokens = None,
        show_version: VersionOpt = False,
    ) -> None:
        """Ask a question (the default command)."""
        from cli.commands.ask import AskOptions, run_ask
        from cli.terminal.diag import Diag

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
            max_article_tokens=max_article_tokens,
        )

        def show_help() -> None:
            # Reached by `support-ask` alone on a terminal: show the whole command's help.
            target = (
                ctx.parent if ctx.parent and ctx.meta.get("support_ask.default_command") else ctx
            )
            diag.stream.write(target.get_help() + "\n")

        guarded(diag, debug, lambda: run_ask(opts, diag, show_help=show_help))
