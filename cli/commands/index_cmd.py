"""`support-ask index DIR`: build or refresh a help centre's index ahead of time;
`index --status DIR`: what is indexed, how big, how stale, where; `index --clear [DIR]`.

The index is what an ask over a big help centre reads (see `gateway.knowledge.store`);
building it here, from a deploy script or cron, spares the first question the wait.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, help_of, local_time
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.units import countdown

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.config import Config
    from gateway.knowledge.files import ArticleCaps, Walked

MB = 1_000_000


def _limits(config: Config) -> ArticleCaps:
    from gateway.knowledge.files import ArticleCaps

    a = config.articles
    return ArticleCaps(a.max_article_bytes, a.max_set_bytes, a.max_set_files)


def build(paths: list[Path], config: Config, diag: Diag, *, named: bool) -> int:
    from cli.runtime import wiring
    from cli.terminal.indexing import IndexProgress
    from gateway.knowledge.centre import is_small

    wiring.check_exist(paths, config=None if named else config)
    found = _walk(paths, config).found
    if is_small(found):
        size = sum(f.size for f in found)
        sys.stdout.write(
            f"{_names(paths)}: {len(found):,} files, {size / 1000:,.0f} KB: read directly on "
            "every question, no index needed\n"
        )
        return ExitCode.OK
    from gateway.knowledge.store import SqliteIndex

    started = time.monotonic()
    with IndexProgress(diag, summary=False) as progress:
        index = wiring.open_help_centre(
            paths, config, whole=False, warn=diag.warn, progress=progress, keep=True, walk=True
        )

    assert isinstance(index, SqliteIndex)
    status = index.status()
    read = progress.last.files if progress.last is not None else 0
    sys.stdout.write(
        f"{_names(paths)}: {status.articles:,} articles, {status.passages:,} passages; "
        f"{read:,} files read in {time.monotonic() - started:.1f} s "
        f"({status.articles + status.skipped - read:,} unchanged); index {status.path}\n"
    )
    if index.not_kept is not None:
        # A question goes on in memory; `index` is run to keep it. Its warning says why,
        # and is said again here, where -q keeps warnings quiet.
        raise CliError(
            f"the index of {_names(paths)} could not be kept: {index.not_kept}",
            ExitCode.IO_ERROR,
            fix="free space on the cache dir's disk, make it writable or set XDG_CACHE_HOME "
            "to a place that is (or wait for the other support-ask), then run support-ask "
            "index again",
        )
    return ExitCode.OK


def _walk(paths: list[Path], config: Config) -> Walked:
    """The files under `paths`, less articles.exclude (the warnings are the build's to give)."""
    from gateway.knowledge.files import SetTooLarge, walk

    try:
        return walk(paths, _limits(config), config.articles.exclude)
    except SetTooLarge as exc:
        raise CliError(exc.message, ExitCode.NOINPUT) from None


def _excluded(walked: Walked, config: Config) -> str:
    """The status's line on articles.exclude: its patterns, and what they left out."""
    patterns = ", ".join(config.articles.exclude)
    files, folders = walked.excluded_files, walked.excluded_folders
    left = f"{files:,} file{'s' * (files != 1)}, {folders:,} folder{'s' * (folders != 1)}"
    return f"exclude: {patterns} ({left} left out)\n"


def _names(paths: list[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def status(paths: list[Path], config: Config, diag: Diag, *, named: bool) -> int:
    from cli.runtime import wiring
    from gateway.config.model import RefreshRule
    from gateway.knowledge import indexfile, store
    from gateway.knowledge.centre import is_small

    wiring.check_exist(paths, config=None if named else config)
    walked = _walk(paths, config)
    files = walked.found
    where = indexfile.index_path(wiring.cache_dir(), paths)
    out = sys.stdout
    source = "" if named else f" (articles.paths in {config.source})"
    out.write(f"articles: {_names(paths)}{source}\n")
    if config.articles.exclude:
        out.write(_excluded(walked, config))
    out.write(f"index: {where}\n")
    if not where.exists():
        size = sum(f.size for f in files)
        if is_small(files):
            out.write(
                f"not indexed: {len(files):,} files ({size / 1000:,.0f} KB) are read directly "
                "on every question\n"
            )
        else:
            out.write(
                f"not indexed yet: {len(files):,} files ({size / MB:,.1f} MB); the first "
                f"question builds it, or run `support-ask index {_names(paths)}`\n"
            )
        return ExitCode.OK
    with store.SqliteIndex.open(where, paths, warn=diag.warn) as index:
        facts = index.status(files)
    out.write(
        f"indexed: {facts.articles:,} articles ({facts.skipped:,} files skipped), "
        f"{facts.passages:,} passages, about {facts.tokens:,} tokens\n"
    )
    out.write(f"on disk: {facts.disk_bytes / MB:,.1f} MB\n")
    if facts.refreshed is not None:
        ago = countdown(time.time() - facts.refreshed)
        out.write(f"refreshed: {local_time(facts.refreshed)} ({ago} ago)\n")
    stale = facts.stale or 0
    if config.articles.refresh is RefreshRule.ON_INDEX:
        then = (
            "articles.refresh is on_index: questions answer from the index as it is "
            f"until `support-ask index {_names(paths)}` runs"
        )
    else:
        then = "the next question re-reads only those"
    out.write(
        "stale: none: every file is as indexed\n"
        if stale == 0
        else f"stale: {stale:,} files changed, added or removed since ({then})\n"
    )
    return ExitCode.OK


def clear(paths: list[Path], diag: Diag) -> int:
    from cli.runtime import wiring
    from gateway.knowledge import indexfile

    removed = indexfile.clear(wiring.cache_dir(), paths or None)
    what = _names(paths) if paths else "every help centre"
    if not removed:
        sys.stdout.write(f"no index to remove for {what}\n")
    else:
        sys.stdout.write(f"removed the index of {what} ({len(removed)} files)\n")
    return ExitCode.OK


def register(app: typer.Typer) -> None:
    @app.command("index", help=help_of("index"))
    def index_cmd(
        paths: Annotated[
            list[Path] | None,
            typer.Argument(
                help="The help centre: article folders or files, as given to --articles "
                "(else the config's articles.paths).",
                metavar="DIR",
                show_default=False,
            ),
        ] = None,
        show_status: Annotated[
            bool,
            typer.Option("--status", help="Say what is indexed, how big, how stale, and where."),
        ] = False,
        clear_it: Annotated[
            bool,
            typer.Option("--clear", help="Remove the index (of DIR, or every index)."),
        ] = False,
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")
        ] = None,
        quiet: Annotated[
            bool,
            typer.Option("--quiet", "-q", help="No progress bar: one summary line, and errors."),
        ] = False,
    ) -> None:
        from cli.runtime import wiring
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag(quiet=quiet)
        given = list(paths or [])

        def run() -> int:
            if show_status and clear_it:
                raise CliError(
                    "--status and --clear do not go together", ExitCode.USAGE, fix="pick one"
                )
            if clear_it:
                return clear(given, diag)
            settings = wiring.load_settings(config, environ=os.environ, notice=lambda _: None)
            paths = given or list(settings.articles.paths)
            if not paths:
                raise CliError(
                    "name the help centre to index",
                    ExitCode.USAGE,
                    fix="support-ask index DIR (the folder you pass to --articles), or name "
                    "it in the config's articles.paths",
                )
            if show_status:
                return status(paths, settings, diag, named=bool(given))
            return build(paths, settings, diag, named=bool(given))

        guarded(diag, False, run)
