"""`support-ask cooldowns`: which deployments are being skipped, for how long, and why;
`cooldowns reset [NAME]` clears them; `cooldowns limits` lists the shared limits' use;
`cooldowns path` prints the state file.

A key's cooldown is its deployment's alone, so it is listed as `deployment / KEY_VARIABLE`,
and `reset primary` clears primary's own record and those of its keys (the user thinks in
deployments); `reset primary/KEY_VARIABLE` clears that one pair. An earlier release's
key-wide records are never shown: nothing honours them any more.
"""

from __future__ import annotations

import json
import os
import sys
import time
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, STATE_HELP, help_of, local_time
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.units import countdown

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.config import Config
    from gateway.config.location import RedisURL
    from gateway.limits.records import Use
    from gateway.model import Cooldown
    from gateway.seams import StateStore

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")]
StateOpt = Annotated[str | None, typer.Option("--state", help=STATE_HELP, metavar="FILE|URL")]


def _setup(
    config_flag: Path | None, state_flag: str | None, diag: Diag
) -> tuple[Config, Path | RedisURL]:
    from cli.runtime import wiring

    # The "using the bundled default" notice is noise here: the listing names the file.
    config = wiring.load_settings(config_flag, environ=os.environ, notice=lambda _: None)
    return config, wiring.state_location(state_flag, environ=os.environ, config=config)


def list_cooldowns(config: Config, path: Path | RedisURL, diag: Diag, *, as_json: bool) -> int:
    from cli.runtime import wiring
    from gateway.engine.credentials import current, obsolete

    # Read-only: a listing reports a bad state file, it never moves or rewrites it.
    store = wiring.open_store(path, warn=diag.warn, config=config, read_only=True)
    now = time.time()
    seen = store.read(now, current(config, os.environ))
    rows = [(c, "cooling") for c in sorted(seen.cooling.values(), key=lambda c: c.until)]
    rows += [
        (c, "probing" if c.name in seen.probing else "awaiting_probe")
        for c in sorted(seen.due.values(), key=lambda c: c.name)
    ]
    rows = [(c, state) for c, state in rows if not obsolete(c.name)]
    # A key's cooldown taken with another value of its variable (another machine's key,
    # or one since replaced) holds nothing back here; it is shown, marked so.
    shown = {c.name for c, _ in rows}
    rows += [
        (c, "other_key")
        for c in store.entries()
        if c.name not in shown and c.credential is not None and c.until > now
        if not obsolete(c.name)
    ]
    if as_json:
        out = [_as_json(c, state, now) for c, state in rows]
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return ExitCode.OK
    if not rows:
        sys.stdout.write(f"no deployment is cooling down (state: {path})\n")
        _print_limits(config, path, store, diag)
        return ExitCode.OK
    from rich.table import Table

    from cli.terminal.output import stdout_console

    table = Table(title=f"cooling down (state: {path})", title_justify="left")
    # What is cooling stays on one line; the words about it fold.
    table.add_column("deployment / key", no_wrap=True)
    for column in ("time left", "reason", "how it ends", "trips", "started"):
        table.add_column(column, overflow="fold")
    for c, state in rows:
        left = {
            "cooling": countdown(c.until - now),
            "probing": "ended: a probe is in flight",
            "awaiting_probe": "ended: the next call probes",
            "other_key": f"{countdown(c.until - now)}, for another value of the key",
        }[state]
        table.add_row(
            shown_name(c),
            left,
            reason(c),
            ending(c),
            str(c.trips),
            local_time(c.started),
        )
    console = stdout_console()
    if not console.is_terminal:
        # Off a terminal (a pipe, a log, cron mail) nothing is watching the width: each row
        # stays whole on its line, as wide as its cells, instead of words broken at 80.
        console.width = _UNBOUNDED
    console.print(table)
    _print_limits(config, path, store, diag)
    return ExitCode.OK


def _uses(config: Config, path: Path | RedisURL, store: StateStore, diag: Diag) -> list[Use]:
    """Each shared allowance the config sets, and each the providers' headers tightened
    (once they stated something), with its use now."""
    from cli.runtime import wiring
    from gateway.engine.allowances import of_deployment, of_key, stated
    from gateway.limits.records import Claim

    configured = [
        Claim(of_deployment(d), d.limits, 0) for d in config.all_deployments() if d.limits
    ]
    configured += [Claim(of_key(variable), limits, 0) for variable, limits in config.key_limits]
    allowance = wiring.open_allowance(path, store, warn=diag.warn, config=config)
    uses = allowance.usage([*configured, *stated(config)], time.time())
    return uses[: len(configured)] + [
        u for u in uses[len(configured) :] if u.requests_rate or u.tokens_rate
    ]


def _use_json(use: Use) -> dict[str, object]:
    lim = use.limits
    return {
        "allowance": use.name,
        "rpm": lim.rpm,
        "tpm": lim.tpm,
        "concurrent": lim.concurrent,
        "stated_rpm": use.requests_rate or None,
        "stated_tpm": use.tokens_rate or None,
        "requests_ahead_s": round(use.requests_ahead, 3),
        "tokens_ahead_s": round(use.tokens_ahead, 3),
        "in_flight": use.in_flight,
    }


def list_limits(config: Config, path: Path | RedisURL, diag: Diag, *, as_json: bool) -> int:
    from cli.runtime import wiring

    store = wiring.open_store(path, warn=diag.warn, config=config, read_only=True)
    uses = _uses(config, path, store, diag)
    if as_json:
        sys.stdout.write(json.dumps([_use_json(u) for u in uses]) + "\n")
    elif not uses:
        sys.stdout.write(f"no shared limits are set or stated (state: {path})\n")
    else:
        _limits_table(uses)
    return ExitCode.OK


def _print_limits(config: Config, path: Path | RedisURL, store: StateStore, diag: Diag) -> None:
    """The shared limits' table after the cooldowns' (nothing when there is none)."""
    uses = _uses(config, path, store, diag)
    if uses:
        _limits_table(uses)


def _limits_table(uses: list[Use]) -> None:
    """Each allowance, its limits (the provider's marked stated), how far ahead its rates
    are booked, and its calls in flight."""
    from rich.table import Table

    from cli.terminal.output import stdout_console

    table = Table(title="shared limits", title_justify="left")
    for column in ("allowance", "limits", "requests booked", "tokens booked", "in flight"):
        table.add_column(column, no_wrap=column == "allowance")
    for use in uses:
        lim = use.limits
        set_ = [
            f"{v} {k}"
            for k, v in (("rpm", lim.rpm), ("tpm", lim.tpm), ("at once", lim.concurrent))
            if v
        ]
        set_ += [
            f"{v:g} {k} stated"
            for k, v in (("rpm", use.requests_rate), ("tpm", use.tokens_rate))
            if v
        ]
        table.add_row(
            use.name,
            ", ".join(set_),
            f"{use.requests_ahead:.1f} s ahead" if lim.rpm or use.requests_rate else "",
            f"{use.tokens_ahead:.1f} s ahead" if lim.tpm or use.tokens_rate else "",
            f"{use.in_flight} of {lim.concurrent}" if lim.concurrent else "",
        )
    console = stdout_console()
    if not console.is_terminal:
        console.width = _UNBOUNDED
    console.print(table)


_UNBOUNDED = 10_000  # columns: wider than any row; an unexpanded table is as wide as its cells


def shown_name(c: Cooldown) -> str:
    """`primary`, or `primary / OPENAI_API_KEY` for one of its keys."""
    from gateway.engine.credentials import key_variable

    variable = key_variable(c.name)
    return c.deployment if variable is None else f"{c.deployment} / {variable}"


def _reset_name(c: Cooldown) -> str:
    """What `cooldowns reset` takes to clear just this record: `primary/OPENAI_API_KEY`."""
    return shown_name(c).replace(" / ", "/")


def reason(c: Cooldown) -> str:
    """What classified the failure: its class, HTTP status and the provider's error code."""
    return " ".join(str(p) for p in (c.kind, c.status, c.code) if p is not None)


_ENDINGS = {
    "policy": "after policy.cooldown",
    "quota": "after policy.quota_cooldown (no reset named)",
    "provider": "when the provider said",
    "capped": "at policy.max_cooldown (a longer wait was asked for)",
    "escalated": "doubled: the probe after the last one failed",
}


def ending(c: Cooldown) -> str:
    """How the cooldown will end, in words."""
    from gateway.engine.credentials import key_variable

    text = _ENDINGS[str(c.basis)]
    if c.credential is not None:
        text += f", or when {key_variable(c.name) or 'the key'} changes"
    return text + "; then one probe"


def _as_json(c: Cooldown, state: str, now: float) -> dict[str, object]:
    from gateway.engine.credentials import key_variable

    return {
        "deployment": c.deployment,
        "key": key_variable(c.name),
        "state": state,
        "seconds_left": round(max(0.0, c.until - now), 3),
        "until": c.until,
        "error_class": str(c.kind),
        "status": c.status,
        "code": c.code,
        "started": c.started,
        "trips": c.trips,
        "ends": str(c.basis),
        "bound_to_key": c.credential is not None,
    }


def reset(config: Config, path: Path | RedisURL, name: str | None, diag: Diag) -> int:
    from cli.runtime import wiring
    from gateway.config.location import RedisURL

    store = wiring.open_store(path, warn=diag.warn, config=config)
    if isinstance(path, RedisURL):
        from gateway.state.redis import RedisStore

        assert isinstance(store, RedisStore)
        problem = store.check()
        if problem is not None:
            raise CliError(
                f"could not reach Redis at {path} ({problem}): nothing was cleared",
                ExitCode.IO_ERROR,
                fix="start Redis or correct state.url / --state, then run the reset again",
            )
    entries = store.entries()
    recorded = {c.deployment for c in entries} | {_reset_name(c) for c in entries}
    if name is not None:
        known = {d.name for d in config.all_deployments()}
        if name not in known and name not in recorded:
            close = get_close_matches(name, sorted(known | recorded), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CliError(
                f"no deployment named '{name}'{hint}",
                ExitCode.USAGE,
                fix=f"name one of: {', '.join(sorted(known | recorded))}; or omit it to clear all",
            )
        if name not in recorded:
            diag.notice(f"{name} was not cooling down")
            return ExitCode.OK
    # A deployment's name clears its keys' cooldowns too: the user thinks in deployments.
    wanted = {
        c.name for c in entries if name is None or name in (c.name, c.deployment, _reset_name(c))
    }
    if name is None:
        store.clear(None)
    for record in sorted(wanted if name is not None else ()):
        store.clear(record)
    # A store that cannot write keeps going in memory (right for a question, which must not
    # fail over a cache); for a reset that would be a lie. Read the state back as the next
    # invocation will see it.
    after = wiring.open_store(path, warn=lambda _: None, config=config, read_only=True).entries()
    left = {c.deployment for c in after if c.name in wanted}
    if left:
        raise CliError(
            f"could not write the state file {path}: still cooling down: {', '.join(sorted(left))}",
            ExitCode.IO_ERROR,
            fix="make the file and its folder writable by you, or point --state elsewhere",
        )
    if name is None:
        diag.notice(f"cleared {len(entries)} cooldown(s) in {path}")
    else:
        diag.notice(f"cleared the cooldown of {name}")
    return ExitCode.OK


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        name="cooldowns",
        help=help_of("cooldowns"),
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @group.callback()
    def cooldowns(
        ctx: typer.Context,
        config: ConfigOpt = None,
        state: StateOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """List each cooling deployment: time left, error class, when it started, detail."""
        if ctx.invoked_subcommand is not None:
            ctx.obj = (config, state)
            return
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag()
        guarded(
            diag, False, lambda: list_cooldowns(*_setup(config, state, diag), diag, as_json=as_json)
        )

    @group.command("reset")
    def reset_cmd(
        ctx: typer.Context,
        name: Annotated[
            str | None,
            typer.Argument(
                help="The deployment to clear (its keys too), or one pair (primary/KEY_VAR); "
                "none clears all.",
                metavar="NAME",
            ),
        ] = None,
        config: ConfigOpt = None,
        state: StateOpt = None,
    ) -> None:
        """Clear one deployment's cooldown, or all of them."""
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        config, state = _inherit(ctx, config, state)
        diag = Diag()
        guarded(diag, False, lambda: reset(*_setup(config, state, diag), name, diag))

    @group.command("limits")
    def limits_cmd(
        ctx: typer.Context,
        config: ConfigOpt = None,
        state: StateOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """List the shared limits and their use: booked ahead, in flight, what providers stated."""
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        config, state = _inherit(ctx, config, state)
        diag = Diag()
        guarded(
            diag, False, lambda: list_limits(*_setup(config, state, diag), diag, as_json=as_json)
        )

    @group.command("path")
    def path_cmd(ctx: typer.Context, config: ConfigOpt = None, state: StateOpt = None) -> None:
        """Print the state file's path."""
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        config, state = _inherit(ctx, config, state)
        diag = Diag()

        def show() -> int:
            sys.stdout.write(f"{_setup(config, state, diag)[1]}\n")
            return ExitCode.OK

        guarded(diag, False, show)

    app.add_typer(group)


def _inherit(
    ctx: typer.Context, config: Path | None, state: str | None
) -> tuple[Path | None, str | None]:
    """`cooldowns --state X reset` and `cooldowns reset --state X` mean the same."""
    parent = ctx.obj if isinstance(ctx.obj, tuple) else (None, None)
    return config or parent[0], state or parent[1]
