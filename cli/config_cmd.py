"""`support-ask config check`: validate the config and show what it resolves to: where it
came from, each deployment (window, policy with overrides), the long-context deployment,
the prompt, the state and log files, and which key variables are set (never their values).

Plain text on stdout, one fact a line: it reads at any terminal width and greps well.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import CONFIG_HELP, STATE_HELP

if TYPE_CHECKING:
    from cli.diag import Diag
    from gateway.config import Deployment, Policy

SET = "✓ set"
UNSET = "✗ not set"
UNUSABLE = "✗ unusable"


def policy_overrides(deployment: Deployment, base: Policy) -> str:
    """The fields this deployment changes from the top-level policy, e.g. 'retries=1'."""
    changed = [
        f"{f.name}={getattr(deployment.policy, f.name):g}"
        for f in fields(deployment.policy)
        if getattr(deployment.policy, f.name) != getattr(base, f.name)
    ]
    return ", ".join(changed) if changed else "the top-level policy"


def policy_text(policy: Policy) -> str:
    return ", ".join(f"{f.name}={getattr(policy, f.name):g}" for f in fields(policy))


def key_status(deployment: Deployment, environ: Mapping[str, str]) -> str:
    from gateway.model import ProviderKind

    if deployment.provider is ProviderKind.LOCAL:
        return "none needed (offline)"
    if not deployment.api_key_env:
        return "none configured"
    from gateway.secret import KeyValueError, read_key

    try:
        state = SET if read_key(environ, deployment.api_key_env) else UNSET
    except KeyValueError as exc:
        state = f"{UNUSABLE}: it {exc.problem}"  # what is wrong, never the value
    return f"{deployment.api_key_env} {state}"


def can_call(deployment: Deployment, environ: Mapping[str, str]) -> bool:
    from gateway.model import ProviderKind

    if deployment.provider is ProviderKind.LOCAL or not deployment.api_key_env:
        return True
    from gateway.secret import KeyValueError, read_key

    try:
        return read_key(environ, deployment.api_key_env) is not None
    except KeyValueError:
        return False


def search_order() -> str:
    import platformdirs

    from gateway.config import APP_NAME, CONFIG_ENV

    user = Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.yaml"
    return f"--config, ${CONFIG_ENV}, ./support-ask.yaml, {user}"


def describe_deployment(d: Deployment, base: Policy, environ: Mapping[str, str]) -> list[str]:
    from gateway.model import ProviderKind

    what = " ".join(p for p in (str(d.provider), d.model) if p)
    lines = [
        f"{d.name}: {what}, window {d.context_window:,} tokens",
        f"key: {key_status(d, environ)}",
    ]
    if d.provider is not ProviderKind.LOCAL:
        lines.append(f"base_url: {d.base_url or '(the provider default)'}")
    if d.api_version:
        lines.append(f"api_version: {d.api_version}")
    if d.headers:
        lines.append(f"headers: {', '.join(name for name, _ in d.headers)}")
    lines.append(f"policy: {policy_overrides(d, base)}")
    return lines


def check(config_flag: Path | None, state_flag: Path | None, diag: Diag) -> int:
    from cli import wiring
    from cli.exitcodes import ExitCode
    from gateway.attemptlog import resolve_log_path
    from gateway.config import BUNDLED_SOURCE
    from prompts import PromptError, load_prompt, template_warnings

    environ = os.environ
    config = wiring.load_settings(config_flag, environ=environ, notice=lambda _: None)
    out: list[str] = []
    problems: list[str] = []

    out.append(f"config: {config.source}")
    if config.source == BUNDLED_SOURCE:
        out.append(f"  (no config file found; searched {search_order()})")
    out.append(f"product: {config.product}")
    try:
        template = load_prompt(config.prompt)
        shown = "the bundled portable prompt" if config.prompt is None else config.prompt
        out.append(f"prompt: {shown}")
        for warning in template_warnings(template):
            diag.warn(warning)
    except PromptError as exc:
        out.append(f"prompt: {config.prompt} ✗")
        problems.append(exc.message)
    from gateway.config.keys import key_errors

    problems += [str(error) for error in key_errors(config, environ)]
    out.append(f"max_output_tokens: {config.max_output_tokens}")
    out.append(f"policy: {policy_text(config.policy)}")

    out.append("deployments, tried in order:")
    for number, d in enumerate(config.deployments, start=1):
        first, *rest = describe_deployment(d, config.policy, environ)
        out.append(f"  {number}. {first}")
        out.extend(f"     {line}" for line in rest)
    if config.long_context is None:
        out.append("long_context: none (an input too large for the first window is refused)")
    else:
        first, *rest = describe_deployment(config.long_context, config.policy, environ)
        out.append(f"long_context: {first}")
        out.extend(f"     {line}" for line in rest)

    state = wiring.state_path(state_flag, environ=environ, config=config)
    out.append(f"state: {state}{'' if state.exists() else ' (not created yet)'}")
    log = resolve_log_path(None, environ, config.log)
    out.append(f"log: {log}{'' if config.log.enabled else ' (disabled)'}")
    if config.max_fallback_rate is not None:
        out.append(f"max_fallback_rate: {config.max_fallback_rate:g}")

    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()
    if not any(can_call(d, environ) for d in config.deployments):
        diag.warn(
            "no deployment can be called as things stand: set a key variable marked ✗ "
            "above, or add the offline `local` deployment"
        )
    if problems:
        for problem in problems:
            diag.error(problem)
        return ExitCode.CONFIG
    sys.stdout.write(f"ok: {config.source} is valid\n")
    return ExitCode.ANSWERED


def register(app: typer.Typer) -> None:
    group = typer.Typer(name="config", help="Check the configuration.", no_args_is_help=True)

    @group.command("check")
    def check_cmd(
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")
        ] = None,
        state: Annotated[
            Path | None, typer.Option("--state", help=STATE_HELP, metavar="FILE")
        ] = None,
    ) -> None:
        """Validate the config; show the deployments, policy, files, and which keys are set."""
        from cli.app import guarded
        from cli.diag import Diag

        diag = Diag()
        guarded(diag, False, lambda: check(config, state, diag))

    app.add_typer(group)
