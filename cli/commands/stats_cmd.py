"""`support-ask stats`: seeing degradation in the attempt log.

It reads the attempt log (gateway.observe.attemptlog) over a window and prints, per deployment,
who served, the fallback share, errors, latency, waits and cooldowns. With a threshold
(`--max-fallback-rate`, else the config's `max_fallback_rate`) it exits 4 when the
fallback share is above it, so cron or a monitor can alert.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, help_of
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.observe import CHECK_FAILED
from cli.terminal.output import stdout_console
from gateway.units import elapsed

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.observe.stats import Deflection, Stats

LOG_HELP = "The attempt log (else $SUPPORT_ASK_LOG, the config's log.path, the user log dir)."


def run_stats(
    *,
    since: str,
    as_json: bool,
    max_fallback_rate: float | None,
    log: Path | None,
    config_flag: Path | None,
    diag: Diag,
) -> int:
    import json

    from cli.runtime import wiring
    from gateway.observe.attemptlog import resolve_log_path, rotated_path
    from gateway.observe.stats import compute_stats, fallback_alert, read_log
    from gateway.units import parse_window

    try:
        window_s = parse_window(since)
    except ValueError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None
    if max_fallback_rate is not None and not 0 <= max_fallback_rate <= 1:
        raise CliError(
            f"--max-fallback-rate {max_fallback_rate:g} is not a share",
            ExitCode.USAGE,
            fix="give a number between 0 and 1: 0.2 means 20%",
        )
    # The "bundled default" notice is noise here: stats only wants the log path and threshold.
    config = wiring.load_settings(config_flag, environ=os.environ, notice=lambda _: None)
    path = resolve_log_path(log, os.environ, config.log)
    threshold = max_fallback_rate if max_fallback_rate is not None else config.max_fallback_rate

    if log is not None and not path.exists() and not rotated_path(path).exists():
        # Named on purpose: a typo must not read as "no questions". The default log not
        # existing yet does mean that, so it is only said for --log.
        raise CliError(
            f"the attempt log {path} does not exist",
            ExitCode.NOINPUT,
            fix="check the path given to --log, or leave it out for the default log",
        )
    now = time.time()
    try:
        read = read_log(path, since=now - window_s)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CliError(
            f"cannot read the attempt log {path}: {reason}",
            ExitCode.NOINPUT,
            fix="point --log at the attempt log file",
        ) from None
    stats = compute_stats(read.lines, now=now, window_s=window_s, unreadable=read.unreadable)
    alert = None if threshold is None else fallback_alert(stats, threshold)

    if as_json:
        data = stats.as_json()
        data.update(log=str(path), max_fallback_rate=threshold, alert=alert)
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        _print_stats(stats, path, threshold)
    if read.unreadable:
        diag.warn(f"{read.unreadable} line(s) of {path} are not attempt records; skipped")
    if alert is not None:
        diag.error(f"alert: {alert}")
        return CHECK_FAILED
    return ExitCode.ANSWERED


def _print_stats(stats: Stats, path: Path, threshold: float | None) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    if stats.questions == 0:
        console.print(Text(f"no questions in the last {stats.window} (log: {path})"))
        return
    share = stats.fallback_share
    shown = "n/a" if share is None else f"{share:.0%}"
    limit = "" if threshold is None else f"; alert above {threshold:.0%}"
    outcomes = ", ".join(f"{count} {status}" for status, count in stats.outcomes)
    console.print(Text(f"last {stats.window}: {stats.questions} questions ({outcomes})"))
    console.print(
        Text(
            f"fallback share {shown}: {stats.by_fallback} of {stats.served} served "
            f"by a fallback{limit}"
        )
    )
    console.print(Text(f"deflection: {_deflection(stats.deflection)}"))
    console.print(Text(f"log: {path}"))
    # Narrow on purpose: it must read in an 80-column log without breaking words; the
    # error classes, the widest figures, get a line per deployment under the table.
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("deployment", no_wrap=True)
    for column in ("served", "fallback", "calls", "skips", "p50", "p95", "waited", "cooled"):
        table.add_column(column, justify="right", no_wrap=True)
    for d in stats.deployments:
        table.add_row(
            Text(d.name),
            str(d.served),
            str(d.as_fallback),
            str(d.calls),
            str(d.skipped),
            elapsed(d.latency_p50),
            elapsed(d.latency_p95),
            elapsed(d.waited_s),
            str(d.cooldowns),
        )
    console.print(table)
    for d in stats.deployments:
        if d.errors:
            listed = ", ".join(f"{kind} {count}" for kind, count in d.errors)
            console.print(Text(f"errors at {d.name}: {listed}"))
    for d in stats.deployments:
        if d.deflection.questions:
            console.print(Text(f"answers at {d.name}: {_deflection(d.deflection)}"))
    if len(stats.days) > 1:
        for day, deflection in stats.days:
            console.print(
                Text(f"{day}: {deflection.questions} questions, {_deflection(deflection)}")
            )
    # Usage, like the errors, on a line of its own: the table stays within 80 columns.
    for d in stats.deployments:
        if d.tokens_in or d.tokens_out or d.cost_usd is not None:
            cost = "" if d.cost_usd is None else f", ${d.cost_usd:.4f}"
            console.print(
                Text(f"usage at {d.name}: {d.tokens_in:,} tokens in, {d.tokens_out:,} out{cost}")
            )


def _deflection(d: Deflection) -> str:
    """`answered 80% (40), handoff 16% (8), refused 4% (2)`: the shares of its questions."""
    parts = (("answered", d.answered), ("handoff", d.handoff), ("refused", d.refused))
    return ", ".join(f"{name} {count / max(d.questions, 1):.0%} ({count})" for name, count in parts)


# Its help after the summary (`common.SUMMARIES`).
_STATS_DETAILS = """Per deployment, from the attempt log: questions served, as a fallback, calls,
skips, error classes, median and p95 latency, time waited, cooldowns taken; the
answered / handoff / refused shares per deployment and per day.
Exits 4 when the fallback share is above the threshold."""


def register(app: typer.Typer) -> None:
    @app.command("stats", help=help_of("stats", _STATS_DETAILS))
    def stats(
        since: Annotated[
            str,
            typer.Option(
                "--since", help="The window: 90m, 24h, 7d (s, m, h, d, w).", metavar="WINDOW"
            ),
        ] = "24h",
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
        max_fallback_rate: Annotated[
            float | None,
            typer.Option(
                "--max-fallback-rate",
                metavar="SHARE",
                help="Exit 4 when the fallback share is above this (0-1; "
                "default: the config's max_fallback_rate).",
                show_default=False,
            ),
        ] = None,
        log: Annotated[Path | None, typer.Option("--log", help=LOG_HELP)] = None,
        config: Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)] = None,
        debug: Annotated[bool, typer.Option("--debug", help="Tracebacks for bugs.")] = False,
    ) -> None:
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag()
        guarded(
            diag,
            debug,
            lambda: run_stats(
                since=since,
                as_json=as_json,
                max_fallback_rate=max_fallback_rate,
                log=log,
                config_flag=config,
                diag=diag,
            ),
        )
