"""Config text -> a validated Config; every error names file:line and the key path.

The text is composed to YAML nodes here and read by the modules beside this one: `walk`
(nodes, their lines, the problems kept), `sections` (policy, prompt, state, log, articles)
and `deployments` (each deployment and its fields). Imported only to validate, and they
only from here: a config served from the cache needs none of this (nor yaml).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config.deployments import read_deployment, read_deployments
from gateway.config.limits import read_keys
from gateway.config.model import (
    AnswerSettings,
    ArticleSettings,
    Config,
    ConfigError,
    Deployment,
    Limits,
    LogSettings,
    Policy,
    PrivacySettings,
    StateSettings,
)
from gateway.config.sections import (
    read_answers,
    read_articles,
    read_fallback_rate,
    read_log,
    read_policy,
    read_privacy,
    read_prompt,
    read_state,
)
from gateway.config.walk import Walk

if TYPE_CHECKING:
    from yaml import Node
    from yaml.constructor import SafeConstructor

_TOP_KEYS = (
    "product",
    "prompt",
    "max_output_tokens",
    "policy",
    "deployments",
    "long_context",
    "state",
    "log",
    "max_fallback_rate",
    "articles",
    "privacy",
    "answers",
    "keys",
)


def load_config_text(text: str, source: str, *, base_dir: Path | None = None) -> Config:
    """Validate config text. `source` names it in errors; relative paths join `base_dir`
    (default: the current directory)."""
    import yaml

    loader_class: type[SafeConstructor]
    try:
        loader_class = yaml.CSafeLoader  # libyaml: several times faster than the pure parser
    except AttributeError:  # pragma: no cover - pyyaml built without libyaml
        loader_class = yaml.SafeLoader
    loader = loader_class(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            context = f" ({exc.context})" if exc.context and exc.problem else ""
            raise ConfigError(
                f"invalid YAML: {problem}{context}",
                file=source,
                line=None if mark is None else mark.line + 1,
            ) from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}", file=source) from None
        if root is None:
            raise ConfigError(
                "the config is empty; fix: start from sample-config.yaml", file=source, line=1
            )
        return read_config(Walk(source, loader, base_dir or Path.cwd()), root)
    finally:
        loader.dispose()


def read_config(w: Walk, root: Node) -> Config:
    """The whole file: each top-level section read on its own (a problem in one does not
    hide the others'), then every problem raised at once."""
    from yaml import MappingNode

    if not isinstance(root, MappingNode):
        w.fail(
            root,
            None,
            f"the top level must be a mapping of {', '.join(_TOP_KEYS[:5])}, ...; "
            f"got {w.describe(root)}",
        )
    top = w.mapping(root, "", _TOP_KEYS)
    product = w.gather("", lambda: w.text(w.required(top, "product", root, ""), "product"))
    prompt = w.gather(None, lambda: read_prompt(w, top.get("prompt", (None, None))[1]))

    max_output_tokens = 400
    if "max_output_tokens" in top:
        max_output_tokens = w.gather(
            400,
            lambda: w.integer(top["max_output_tokens"][1], "max_output_tokens", minimum=1),
        )

    policy = Policy()
    if "policy" in top and not w.is_null(top["policy"][1]):
        policy = w.gather(policy, partial(read_policy, w, top["policy"][1], "policy", policy))

    seen: dict[str, str] = {}
    none: tuple[Deployment, ...] = ()
    deployments = w.gather(none, lambda: read_deployments(w, top, root, policy, seen))
    long_context = None
    if "long_context" in top and not w.is_null(top["long_context"][1]):
        long_context = w.gather(
            None, lambda: read_deployment(w, top["long_context"][1], "long_context", policy, seen)
        )

    state_path: Path | None = None
    state = StateSettings()
    if "state" in top and not w.is_null(top["state"][1]):
        unset: tuple[Path | None, StateSettings] = (None, state)
        state_path, state = w.gather(unset, lambda: read_state(w, top["state"][1]))

    log = LogSettings()
    if "log" in top and not w.is_null(top["log"][1]):
        log = w.gather(log, partial(read_log, w, top["log"][1]))

    max_fallback_rate = None
    if "max_fallback_rate" in top and not w.is_null(top["max_fallback_rate"][1]):
        max_fallback_rate = w.gather(
            None, lambda: read_fallback_rate(w, top["max_fallback_rate"][1])
        )

    articles = ArticleSettings()
    if "articles" in top and not w.is_null(top["articles"][1]):
        articles = read_articles(w, top["articles"][1])

    privacy = PrivacySettings()
    if "privacy" in top and not w.is_null(top["privacy"][1]):
        privacy = w.gather(privacy, partial(read_privacy, w, top["privacy"][1]))

    answers = AnswerSettings()
    if "answers" in top and not w.is_null(top["answers"][1]):
        answers = read_answers(w, top["answers"][1])

    key_limits: tuple[tuple[str, Limits], ...] = ()
    if "keys" in top and not w.is_null(top["keys"][1]):
        key_limits = w.gather(key_limits, partial(read_keys, w, top["keys"][1]))
        named = {
            v
            for d in (*deployments, *([long_context] if long_context else []))
            for v in d.key_variables
        }
        for variable, _ in key_limits:
            if variable not in named:
                w.note(
                    top["keys"][1],
                    f"keys.{variable}",
                    f"no deployment names {variable} in api_key_env; name it there, or remove "
                    "this entry",
                )

    if w.problems:
        raise ConfigError.several(w.problems)
    return Config(
        key_limits=key_limits,
        articles=articles,
        answers=answers,
        product=product,
        deployments=deployments,
        long_context=long_context,
        policy=policy,
        max_output_tokens=max_output_tokens,
        prompt=prompt,
        state_path=state_path,
        state=state,
        source=w.source,
        log=log,
        max_fallback_rate=max_fallback_rate,
        privacy=privacy,
    )
