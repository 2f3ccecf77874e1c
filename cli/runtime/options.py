"""The options `ask` and `batch` share, defined once so they mean the same on both.

Each is an `Annotated` type a command's parameter takes as is; the field of `AskOptions`
it fills has the parameter's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.runtime.common import CONFIG_HELP, STATE_HELP

ARTICLES_HELP = "An article file or a folder of them (read recursively); repeatable."
LOG_HELP = "The attempt log file (else $SUPPORT_ASK_LOG, the config's log.path, the user log dir)."

Articles = Annotated[
    list[Path] | None,
    typer.Option("--articles", "-a", help=ARTICLES_HELP, metavar="PATH", show_default=False),
]
Config = Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")]
State = Annotated[str | None, typer.Option("--state", help=STATE_HELP, metavar="FILE|URL")]
Product = Annotated[
    str | None,
    typer.Option("--product", help="The product name the prompt uses.", metavar="NAME"),
]
Verbose = Annotated[
    int,
    typer.Option(
        "--verbose", "-v", count=True, help="Log each attempt (-vv: debug).", show_default=False
    ),
]
Debug = Annotated[
    bool,
    typer.Option(
        "--debug", help="Debug and HTTP logs (keys redacted); tracebacks for internal errors."
    ),
]
Log = Annotated[Path | None, typer.Option("--log", metavar="FILE", help=LOG_HELP)]
NoLog = Annotated[bool, typer.Option("--no-log", help="Do not append to the attempt log.")]
Deployments = Annotated[
    list[str] | None,
    typer.Option(
        "--deployment",
        "-d",
        metavar="NAME",
        help="Use only this deployment; repeatable (tried in the config's order).",
        show_default=False,
    ),
]
Budget = Annotated[
    float | None,
    typer.Option(
        "--budget",
        metavar="SECONDS",
        help="Seconds for the whole question (else policy.budget).",
        show_default=False,
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Seconds for one attempt (else policy.timeout).",
        show_default=False,
    ),
]
MaxArticleTokens = Annotated[
    str | None,
    typer.Option(
        "--max-article-tokens",
        metavar="N|all",
        help="The passages sent per question, in tokens (else the config's "
        "articles.max_tokens); `all` sends every article whole.",
        show_default=False,
    ),
]
