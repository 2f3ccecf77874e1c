"""`support-ask config check`: validate the config and show what it resolves to: where it
came from, the help centre it names (articles.paths, articles.exclude), each deployment
(window, policy with overrides), the long-context deployment, the prompt, the languages
answered in, the state and log files, and which key variables are set (never their values).
`config init` writes the commented sample config (a pip install has no sample-config.yaml).

Plain text on stdout, one fact a line: it reads at any terminal width and greps well; or
one JSON object with `--json`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, STATE_HELP, can_call, help_of
from cli.runtime.sample import SAMPLE_PRODUCT
from gateway.record import fields

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.config import Config, Deployment, Policy
    from gateway.config.location import RedisURL

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


def policy_json(policy: Policy) -> dict[str, object]:
    return {f.name: getattr(policy, f.name) for f in fields(policy)}


def policy_text(policy: Policy) -> str:
    return ", ".join(f"{f.name}={getattr(policy, f.name):g}" for f in fields(policy))


def key_status(deployment: Deployment, environ: Mapping[str, str]) -> str:
    from gateway.engine.credentials import variables
    from gateway.model import ProviderKind

    if deployment.provider is ProviderKind.LOCAL:
        return "none needed (offline)"
    names = variables(deployment)
    if not names:
        return "none configured"
    from gateway.secrets.key import KeyValueError, read_key

    said = []
    for variable in names:
        try:
            state = SET if read_key(environ, variable) else UNSET
        except KeyValueError as exc:
            state = f"{UNUSABLE}: it {exc.problem}"  # what is wrong, never the value
        said.append(f"{variable} {state}")
    if len(names) > 1:
        said.append(f"({deployment.key_strategy})")
    return ", ".join(said[:-1]) + " " + said[-1] if len(names) > 1 else said[0]


def search_order() -> str:
    from gateway.config import CONFIG_ENV, user_config_file

    return f"--config, ${CONFIG_ENV}, ./support-ask.yaml, {user_config_file()}"


def describe_deployment(d: Deployment, base: Policy, environ: Mapping[str, str]) -> list[str]:
    from gateway.model import ProviderKind

    what = " ".join(p for p in (str(d.provider), d.model) if p)
    # The offline ranker's window is never counted against: it has none to show.
    window = "no window" if d.provider.offline else f"window {d.context_window:,} tokens"
    lines = [
        f"{d.name}: {what}, {window}",
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


def deployment_json(d: Deployment, environ: Mapping[str, str]) -> dict[str, object]:
    """One deployment for `config check --json`: never a key's value, only whether it is set."""
    from gateway.engine.credentials import variables

    return {
        "name": d.name,
        "provider": str(d.provider),
        "model": d.model,
        "context_window": d.context_window,
        "api_key_env": d.api_key_env,
        "key_set": bool(d.api_key_env and environ.get(d.api_key_env, "").strip()),
        "keys": [{"variable": v, "set": bool(environ.get(v, "").strip())} for v in variables(d)],
        "key_strategy": str(d.key_strategy),
        "callable": can_call(d, environ),
        "base_url": d.base_url,
        "api_version": d.api_version,
        "headers": [name for name, _ in d.headers],
        "policy": policy_json(d.policy),
    }


def state_check(state: Path | RedisURL, config: Config, diag: Diag) -> str | None:
    """None when the state can be reached (a file always can: it is made on first use);
    for Redis, whether it answered a PING, else why not. Said as a warning, not an error:
    without Redis every question still runs, on the local file."""
    if isinstance(state, Path):
        return None
    from cli.runtime import wiring
    from gateway.state.redis import RedisStore

    store = wiring.open_store(state, warn=lambda _: None, config=config, read_only=True)
    assert isinstance(store, RedisStore)
    try:
        problem = store.check()
    finally:
        store.close()
    if problem is not None:
        diag.warn(
            f"Redis at {state} is not reachable ({problem}): questions will keep their "
            "cooldowns in the local state file until it is"
        )
    return problem


def articles_lines(
    config: Config, problems: list[str], listed: list[dict[str, object]]
) -> list[str]:
    """The help centre the config names (a path that does not exist is a problem), what
    it leaves out, the passages' budget, and when its index is refreshed."""
    from gateway.config.model import RefreshRule

    a = config.articles
    lines = []
    if a.paths:
        shown = []
        for path in a.paths:
            shown.append(f"{path}{'' if path.exists() else ' ✗ not found'}")
            if not path.exists():
                message = (
                    f"no such file or folder: {path} (a relative path is relative to the "
                    "config file's folder); fix the path, or remove it"
                )
                problems.append(f"{config.source}: articles.paths: {message}")
                listed.append(
                    {
                        "file": config.source,
                        "line": None,
                        "key": "articles.paths",
                        "message": message,
                    }
                )
        lines.append(f"articles: {', '.join(shown)}")
    else:
        lines.append("articles: none named (each command's --articles)")
    if a.exclude:
        lines.append(f"  exclude: {', '.join(a.exclude)}")
    budget = "all (every article whole)" if a.max_tokens is None else f"{a.max_tokens:,} tokens"
    lines.append(f"  per question: {budget}")
    if a.refresh is RefreshRule.ON_INDEX:
        lines.append("  refreshed: by `support-ask index` alone (articles.refresh: on_index)")
    return lines


def articles_json(config: Config) -> dict[str, object]:
    a = config.articles
    return {
        "paths": [str(p) for p in a.paths],
        "exclude": list(a.exclude),
        "max_tokens": a.max_tokens,
        "max_article_bytes": a.max_article_bytes,
        "max_set_bytes": a.max_set_bytes,
        "max_set_files": a.max_set_files,
        "refresh": a.refresh.value,
    }


def languages_lines(config: Config) -> list[str]:
    """The languages answered in, the default, and in which of them the config words its
    fixed phrases (the others are said as shipped: `gateway.answers.phrases`)."""
    from gateway.config.model import Translations

    a = config.answers
    listed = ", ".join(a.languages) if a.languages else "any the detector knows"
    lines = [f"languages: {listed} (default {a.default_language})"]
    for name, text in [("handoff_message", a.handoff_message), *a.phrases]:
        if isinstance(text, Translations):
            lines.append(f"  {name}: {', '.join(code for code, _ in text.texts)}")
        elif text is not None:
            lines.append(f"  {name}: one text for every language")
    return lines


def check(config_flag: Path | None, state_flag: str | None, diag: Diag, *, as_json: bool) -> int:
    from cli.runtime import wiring
    from cli.runtime.exitcodes import ExitCode
    from gateway.config import BUNDLED_SOURCE, ConfigError
    from gateway.observe.attemptlog import resolve_log_path
    from prompts import PromptError, load_prompt, template_warnings

    environ = os.environ
    try:
        config = wiring.load_settings(config_flag, environ=environ, notice=lambda _: None)
    except ConfigError as exc:
        if not as_json:
            raise
        every = [p.as_json() for p in exc.problems]
        _write_json({"config": exc.file, "valid": False, "problems": every})
        for found in exc.problems:
            diag.error(str(found))
        return ExitCode.CONFIG
    out: list[str] = []
    problems: list[str] = []
    listed: list[dict[str, object]] = []  # the same problems, for --json

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
        listed.append(
            {"file": str(config.prompt), "line": None, "key": "prompt", "message": exc.message}
        )
    out.extend(articles_lines(config, problems, listed))
    from gateway.config.keys import key_errors

    for error in key_errors(config, environ):
        problems.append(str(error))
        listed.append(error.as_json())
    out.extend(languages_lines(config))
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

    state = wiring.state_location(state_flag, environ=environ, config=config)
    reachable = state_check(state, config, diag)
    if isinstance(state, Path):
        out.append(f"state: {state}{'' if state.exists() else ' (not created yet)'}")
    else:
        said = "connected" if reachable is None else f"could not connect: {reachable}"
        out.append(f"state: {state} (prefix {config.state.prefix}): {said}")
    log = resolve_log_path(None, environ, config.log)
    out.append(f"log: {log}{'' if config.log.enabled else ' (disabled)'}")
    if config.max_fallback_rate is not None:
        out.append(f"max_fallback_rate: {config.max_fallback_rate:g}")

    if as_json:
        lc = config.long_context
        _write_json(
            {
                "config": config.source,
                "valid": not problems,
                "problems": listed,
                "product": config.product,
                "prompt": None if config.prompt is None else str(config.prompt),
                "max_output_tokens": config.max_output_tokens,
                "articles": articles_json(config),
                "languages": list(config.answers.languages),
                "default_language": config.answers.default_language,
                "policy": policy_json(config.policy),
                "deployments": [deployment_json(d, environ) for d in config.deployments],
                "long_context": None if lc is None else deployment_json(lc, environ),
                "state": str(state),
                "state_reachable": reachable is None,
                "log": str(log),
                "log_enabled": config.log.enabled,
                "max_fallback_rate": config.max_fallback_rate,
            }
        )
    else:
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
    if not as_json:
        sys.stdout.write(f"ok: {config.source} is valid\n")
    return ExitCode.ANSWERED


def _write_json(obj: dict[str, object]) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


STDOUT = Path("-")


def init(target: Path | None, *, force: bool, diag: Diag, product: str | None = None) -> int:
    """Write the commented sample config (the bundled default) where it will be found,
    naming `product` (asked for on a terminal when not given; else the sample's)."""
    from cli.runtime.exitcodes import ExitCode
    from cli.runtime.failure import CliError
    from gateway.config import default_config_text, user_config_file

    if product is None and target != STDOUT and sys.stdin.isatty() and sys.stderr.isatty():
        sys.stderr.write(f"Your product's name (answers name it) [{SAMPLE_PRODUCT}]: ")
        sys.stderr.flush()
        product = sys.stdin.readline().strip() or None
    text = with_product(default_config_text(), product)
    if target == STDOUT:
        sys.stdout.write(text)
        return ExitCode.ANSWERED
    path = (target or user_config_file()).expanduser()
    if path.is_dir():
        path = path / "support-ask.yaml"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: never replace a config that appeared meanwhile, unless asked to.
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise CliError(
            f"{path} already exists; not overwritten",
            ExitCode.CANT_CREATE,
            fix="pass --force to replace it, or name another file: support-ask config init PATH",
        ) from None
    except OSError as exc:
        raise CliError(
            f"cannot create {path}: {exc.strerror or exc}",
            ExitCode.CANT_CREATE,
            fix="name a file in a folder you can write: support-ask config init PATH",
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    diag.notice(f"wrote the sample config to {path}")
    if product is None:
        diag.notice(
            f"its `product:` is the sample's, {SAMPLE_PRODUCT}: set it to your product's name"
        )
    diag.notice(
        f"next: set the key variables it names, then `support-ask config check{_flag(path)}`"
    )
    return ExitCode.ANSWERED


def with_product(text: str, product: str | None) -> str:
    """The sample config's text with its `product:` line naming `product` (None: as is).
    JSON's quoting is YAML's double-quoted string, so any name reads back as written."""
    import json
    import re

    if product is None or not product.strip():
        return text
    named = f"product: {json.dumps(product.strip(), ensure_ascii=False)}"
    return re.sub(r"^product: .*$", lambda _: named, text, count=1, flags=re.MULTILINE)


def _flag(path: Path) -> str:
    """The --config a written file needs, unless it is in a place searched anyway."""
    from gateway.config import user_config_file

    searched = (Path.cwd() / "support-ask.yaml", user_config_file().absolute())
    return "" if path.absolute() in searched else f" --config {path}"


def register(app: typer.Typer) -> None:
    group = typer.Typer(name="config", help=help_of("config"), no_args_is_help=True)

    @group.command("check")
    def check_cmd(
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")
        ] = None,
        state: Annotated[
            str | None, typer.Option("--state", help=STATE_HELP, metavar="FILE|URL")
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON object (every problem, or all).")
        ] = False,
    ) -> None:
        """Validate the config; show the deployments, policy, files, and which keys are set."""
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag()
        guarded(diag, False, lambda: check(config, state, diag, as_json=as_json))

    @group.command("init")
    def init_cmd(
        path: Annotated[
            Path | None,
            typer.Argument(
                help="Where to write it (default: the user config dir's config.yaml, the "
                "last place searched; a folder gets support-ask.yaml; `-` prints it).",
                metavar="PATH",
                show_default=False,
            ),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Replace the file if it exists.")
        ] = False,
        product: Annotated[
            str | None,
            typer.Option(
                "--product",
                help="Your product's name, written as `product:` (asked for on a terminal "
                "when not given).",
                metavar="NAME",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """Write the commented sample config (every key explained) to start from."""
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag()
        guarded(diag, False, lambda: init(path, force=force, diag=diag, product=product))

    app.add_typer(group)
