"""Config text -> a validated Config; every error names file:line and the key path.

Imported only to validate: a config served from the cache needs none of this (nor yaml).
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from gateway.config.model import (
    MAX_RETRIES,
    ArticleSettings,
    Config,
    ConfigError,
    Deployment,
    KeyStrategy,
    LogSettings,
    MaskPattern,
    Policy,
    Price,
    PrivacySettings,
    StateSettings,
)
from gateway.model import ProviderKind
from gateway.secrets.shapes import (
    CREDENTIAL_FIELDS,
    KEY_HEADERS,
    PLACEHOLDER,
    has_userinfo,
    is_credential_param,
    looks_like_a_key,
)

# The YAML is composed to nodes rather than loaded to dicts so that every value keeps its
# line: a config error names file:line and the key path (`deployments[1].context_window`).
# Per-deployment policy overrides live in a nested `policy:` mapping only, so a key in a
# deployment means one thing; a flat `retries:` there is an error that shows the nested form.

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from yaml import Node
    from yaml.constructor import SafeConstructor

    Pair = tuple[Node, Node]

T = TypeVar("T")

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"

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
)
_POLICY_KEYS = tuple(f.name for f in fields(Policy))
# A zero here could never make a call (or hear a first token); zero waits are fine.
_NONZERO_TIMES = frozenset({"budget", "timeout", "first_token_timeout", "stall_timeout"})
_DEPLOYMENT_KEYS = (
    "name",
    "provider",
    "model",
    "api_key_env",
    "key_strategy",
    "base_url",
    "api_version",
    "context_window",
    "headers",
    "policy",
    "price",
)
_PRICE_KEYS = tuple(f.name for f in fields(Price))
_STATE_KEYS = ("path", "url", "prefix", "connect_timeout", "timeout")
_LOG_KEYS = tuple(f.name for f in fields(LogSettings))
_ARTICLES_KEYS = tuple(f.name for f in fields(ArticleSettings))
_PRIVACY_KEYS = tuple(f.name for f in fields(PrivacySettings))
_PATTERN_KEYS = tuple(f.name for f in fields(MaskPattern))

# Patterns, compiled (and cached by `re`) only when a file is validated: a cached config
# needs none of them.
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"
_DEPLOYMENT_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z"
_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z"


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
        return _Reader(source, loader, base_dir or Path.cwd()).config(root)
    finally:
        loader.dispose()


_USE_KEY_ENV = (
    "credentials never go in the config: put the key in an environment variable and name "
    "that variable with api_key_env"
)


def _url_problem(url: str) -> str | None:
    """What keeps `url` from being a base_url, in words that quote no secret it holds."""
    from urllib.parse import parse_qsl, urlsplit

    example = "e.g. https://api.example.com/v1"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return f"a URL holds no spaces or control characters; write it on one line, {example}"
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket
        return f"not a valid URL; {example}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"expected an http:// or https:// URL, {example}"
    if has_userinfo(parts.netloc):
        return f"holds a user name or password (user:secret@host); {_USE_KEY_ENV}"
    if parts.query or url.endswith("?"):
        names = [name.lower() for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
        values = [value for _, value in parse_qsl(parts.query, keep_blank_values=True)]
        if any(is_credential_param(n) for n in names) or any(looks_like_a_key(v) for v in values):
            return f"holds a credential in its query (?key=...); {_USE_KEY_ENV}"
        return (
            "a base_url takes no query (?...): the API path is appended to it; "
            f"remove it, {example}"
        )
    if parts.fragment or url.endswith("#"):
        return f"a base_url takes no fragment (#...): remove it, {example}"
    shown = f"{parts.scheme}://{parts.netloc}"
    if not parts.hostname:
        return f"no host in {shown!r}; {example}"
    host = parts.hostname
    if not re.match(r"[\w.-]+\Z", host) and ":" not in host:  # ":" for IPv6
        return f"{host!r} is not a host name; {example}"
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        return f"the port in {shown!r} is not a number from 1 to 65535; {example}"
    return None


class _Echo(ConfigError):
    """A problem already reported in other words (a required key missing because it was
    misspelt, and the misspelling's message named it): not reported twice."""


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Reader:
    """Turns a composed YAML tree into a Config, every problem named with its line.

    A check fails at its first problem (`fail` raises); the parts of a file that do not
    depend on each other (each top-level section, each deployment, each of its fields, each
    policy value) are checked through `gather`, which keeps the problem and goes on, so one
    run reports every problem of the file at once.
    """

    def __init__(self, source: str, loader: SafeConstructor, base_dir: Path) -> None:
        self.source = source
        self.loader = loader
        self.base_dir = base_dir
        self.key_lines: dict[int, int] = {}  # id(collection value node) -> its key's line
        self.problems: list[ConfigError] = []
        self.suggested: set[str] = set()  # key paths a misspelt key was told it may mean

    # -- errors

    def problem(self, node: Node, key: str | None, message: str) -> ConfigError:
        line = self.key_lines.get(id(node))
        if line is None and node.start_mark is not None:
            line = node.start_mark.line
        return ConfigError(
            message, file=self.source, line=None if line is None else line + 1, key=key
        )

    def fail(self, node: Node, key: str | None, message: str) -> NoReturn:
        raise self.problem(node, key, message)

    def note(self, node: Node, key: str | None, message: str) -> None:
        """A problem that does not stop the check of what follows."""
        self.problems.append(self.problem(node, key, message))

    def gather(self, default: T, check: Callable[[], T]) -> T:
        """`check()`, or `default` with its problem kept for the report."""
        try:
            return check()
        except _Echo:
            return default
        except ConfigError as exc:
            self.problems.append(exc)
            return default

    def describe(self, node: Node, *, secret: bool = False) -> str:
        """What the user wrote, in words; `secret` values are never echoed."""
        from yaml import MappingNode, SequenceNode

        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        kind = {
            _NULL: "nothing (null)",
            _BOOL: "a true/false value",
            _INT: "a whole number",
            _FLOAT: "a number",
        }.get(node.tag, "text")
        shown = str(node.value)
        if secret or node.tag == _NULL or looks_like_a_key(shown):
            return kind
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{kind} {shown!r}"

    # -- shapes

    def pairs(self, node: Node, path: str, *, fold: Callable[[str], str] = str) -> list[Pair]:
        """A mapping's (key, value) nodes, merge keys applied (an explicit key overrides a
        merged one, as in YAML); a key written twice is an error, not a silent override."""
        from yaml import MappingNode, ScalarNode, SequenceNode

        if not isinstance(node, MappingNode):
            self.fail(node, path or None, f"expected a mapping, got {self.describe(node)}")
        first: dict[str, Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode):
                self.fail(key_node, path or None, "a key must be plain text")
            if key_node.tag == _MERGE:
                continue
            key = fold(str(key_node.value))
            if key in first:
                line = first[key].start_mark.line + 1
                self.note(
                    key_node,
                    _join(path, str(key_node.value)),
                    f"given twice (first on line {line}); keep one",
                )
                continue
            first[key] = key_node
        self.loader.flatten_mapping(node)  # YAML merge keys (<<: *defaults), merged first
        latest: dict[str, Pair] = {}
        for key_node, value_node in node.value:
            if isinstance(value_node, MappingNode | SequenceNode):
                # A block value starts below its key; errors about it point at the key.
                self.key_lines[id(value_node)] = key_node.start_mark.line
            latest[fold(str(key_node.value))] = (key_node, value_node)
        return list(latest.values())

    def mapping(
        self, node: Node, path: str, allowed: Iterable[str], *, where: str = ""
    ) -> dict[str, Pair]:
        """A mapping's entries by key: unknown and repeated keys are errors."""
        allowed = tuple(allowed)
        out: dict[str, Pair] = {}
        for key_node, value_node in self.pairs(node, path):
            key = str(key_node.value)
            if key not in allowed:
                shown = PLACEHOLDER if looks_like_a_key(key) else key
                self.note(key_node, _join(path, shown), self.unknown_key(key, allowed, where, path))
                continue
            out[key] = (key_node, value_node)
        return out

    def unknown_key(self, key: str, allowed: tuple[str, ...], where: str, path: str) -> str:
        import difflib

        shown = "(not shown: it looks like an API key)" if looks_like_a_key(key) else repr(key)
        message = f"unknown key {shown}{where}"
        if where == " in a deployment" and key in _POLICY_KEYS:
            return f"{message}; policy overrides go in a nested mapping: `policy: {{{key}: ...}}`"
        if key.lower() in CREDENTIAL_FIELDS:
            return (
                f"{message}; API keys never go in the config: put the key in an environment "
                "variable and name that variable with api_key_env"
            )
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if close:
            self.suggested.add(_join(path, close[0]))
        return f"{message}{hint}; valid keys: {', '.join(allowed)}"

    def required(self, entries: dict[str, Pair], key: str, node: Node, path: str) -> Node:
        if key not in entries:
            if _join(path, key) in self.suggested:
                raise _Echo(f"{key} missing", file=self.source)  # the misspelling said it
            self.fail(node, _join(path, key), "missing; this key is required")
        return entries[key][1]

    # -- scalars

    def is_null(self, node: Node) -> bool:
        from yaml import ScalarNode

        return isinstance(node, ScalarNode) and node.tag == _NULL

    def text(self, node: Node, path: str, *, secret: bool = False) -> str:
        """Text as written: an unquoted 2024-10-21 or 1.5 stays the characters typed."""
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag == _NULL:
            self.fail(node, path, f"expected text, got {self.describe(node, secret=secret)}")
        value = str(node.value)
        if not value.strip():
            self.fail(node, path, "must not be empty")
        return value

    def optional_text(self, node: Node | None, path: str, *, secret: bool = False) -> str | None:
        if node is None or self.is_null(node):
            return None
        return self.text(node, path, secret=secret)

    def integer(self, node: Node, path: str, *, minimum: int, maximum: int | None = None) -> int:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != _INT:
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a whole number, got {self.describe(node)}{hint}")
        value = self.loader.construct_object(node)
        assert isinstance(value, int)
        if maximum is not None and not minimum <= value <= maximum:
            self.fail(node, path, f"must be from {minimum} to {maximum}, got {value}")
        if value < minimum:
            self.fail(node, path, f"must be at least {minimum}, got {value}")
        return value

    def number(self, node: Node, path: str, *, minimum: float, above: bool = False) -> float:
        """A float; whole numbers welcome. `above` makes the minimum exclusive."""
        import math

        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag not in (_INT, _FLOAT):
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a number, got {self.describe(node)}{hint}")
        value = float(self.loader.construct_object(node))
        if not math.isfinite(value):
            self.fail(node, path, f"must be a finite number, got {node.value}")
        if value < minimum or (above and value == minimum):
            bound = "greater than" if above else "at least"
            self.fail(node, path, f"must be {bound} {minimum:g}, got {value:g}")
        return value

    def boolean(self, node: Node, path: str) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != _BOOL:
            self.fail(node, path, f"expected true or false, got {self.describe(node)}")
        return bool(self.loader.construct_object(node))

    def path_value(self, node: Node | None, path: str) -> Path | None:
        text = self.optional_text(node, path)
        if text is None:
            return None
        return self.base_dir / Path(text).expanduser()

    def _quoted_number(self, node: Node) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            return False
        try:
            float(str(node.value))
        except ValueError:
            return False
        return True

    # -- sections

    def config(self, root: Node) -> Config:
        from yaml import MappingNode

        if not isinstance(root, MappingNode):
            self.fail(
                root,
                None,
                f"the top level must be a mapping of {', '.join(_TOP_KEYS[:5])}, ...; "
                f"got {self.describe(root)}",
            )
        top = self.mapping(root, "", _TOP_KEYS)
        product = self.gather(
            "", lambda: self.text(self.required(top, "product", root, ""), "product")
        )
        prompt = self.gather(None, lambda: self.prompt(top.get("prompt", (None, None))[1]))

        max_output_tokens = 400
        if "max_output_tokens" in top:
            max_output_tokens = self.gather(
                400,
                lambda: self.integer(top["max_output_tokens"][1], "max_output_tokens", minimum=1),
            )

        policy = Policy()
        if "policy" in top and not self.is_null(top["policy"][1]):
            policy = self.gather(policy, partial(self.policy, top["policy"][1], "policy", policy))

        seen: dict[str, str] = {}
        none: tuple[Deployment, ...] = ()
        deployments = self.gather(none, lambda: self.deployments(top, root, policy, seen))
        long_context = None
        if "long_context" in top and not self.is_null(top["long_context"][1]):
            long_context = self.gather(
                None, lambda: self.deployment(top["long_context"][1], "long_context", policy, seen)
            )

        state_path: Path | None = None
        state = StateSettings()
        if "state" in top and not self.is_null(top["state"][1]):
            unset: tuple[Path | None, StateSettings] = (None, state)
            state_path, state = self.gather(unset, lambda: self.state(top["state"][1]))

        log = LogSettings()
        if "log" in top and not self.is_null(top["log"][1]):
            log = self.gather(log, partial(self.log, top["log"][1]))

        max_fallback_rate = None
        if "max_fallback_rate" in top and not self.is_null(top["max_fallback_rate"][1]):
            max_fallback_rate = self.gather(
                None, lambda: self.fallback_rate(top["max_fallback_rate"][1])
            )

        articles = ArticleSettings()
        if "articles" in top and not self.is_null(top["articles"][1]):
            articles = self.articles(top["articles"][1])

        privacy = PrivacySettings()
        if "privacy" in top and not self.is_null(top["privacy"][1]):
            privacy = self.gather(privacy, partial(self.privacy, top["privacy"][1]))

        if self.problems:
            raise ConfigError.several(self.problems)
        return Config(
            articles=articles,
            product=product,
            deployments=deployments,
            long_context=long_context,
            policy=policy,
            max_output_tokens=max_output_tokens,
            prompt=prompt,
            state_path=state_path,
            state=state,
            source=self.source,
            log=log,
            max_fallback_rate=max_fallback_rate,
            privacy=privacy,
        )

    def prompt(self, node: Node | None) -> Path | None:
        prompt = self.path_value(node, "prompt")
        if prompt is not None and node is not None and not prompt.is_file():
            self.fail(
                node,
                "prompt",
                f"no prompt file at {prompt} (a relative path is relative to the config "
                "file's folder); fix the path, or set null for the bundled prompt",
            )
        return prompt

    def deployments(
        self, top: dict[str, Pair], root: Node, policy: Policy, seen: dict[str, str]
    ) -> tuple[Deployment, ...]:
        from yaml import SequenceNode

        list_node = self.required(top, "deployments", root, "")
        if not isinstance(list_node, SequenceNode):
            self.fail(list_node, "deployments", f"expected a list, got {self.describe(list_node)}")
        if not list_node.value:
            self.fail(
                list_node,
                "deployments",
                "the list is empty; add at least one deployment (the offline one: "
                "`- {name: local, provider: local, context_window: 1000000}`)",
            )
        checked = [
            self.gather(None, partial(self.deployment, item, f"deployments[{i}]", policy, seen))
            for i, item in enumerate(list_node.value)
        ]
        return tuple(d for d in checked if d is not None)

    def state(self, node: Node) -> tuple[Path | None, StateSettings]:
        entries = self.mapping(node, "state", _STATE_KEYS, where=" in state")
        path = self.path_value(entries.get("path", (None, None))[1], "state.path")
        settings = StateSettings()
        url_node = entries.get("url", (None, None))[1]
        text = self.optional_text(url_node, "state.url", secret=True)
        if text is not None and url_node is not None:
            from gateway.config.location import SCHEMES, LocationError, RedisURL

            if not text.startswith(SCHEMES):
                self.fail(url_node, "state.url", "expected a redis:// or rediss:// URL")
            try:
                settings = replace(settings, url=RedisURL.parse(text))
            except LocationError as exc:
                self.fail(url_node, "state.url", str(exc))
            if path is not None:
                self.fail(
                    url_node,
                    "state.url",
                    "give state.path or state.url, not both (with Redis down, the local "
                    "file is the user state dir's)",
                )
        if "prefix" in entries:
            prefix = self.text(entries["prefix"][1], "state.prefix")
            if not re.match(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z", prefix):
                self.fail(
                    entries["prefix"][1],
                    "state.prefix",
                    f"{prefix!r} is not a usable prefix: letters, digits, '-', '_', '.', ':'",
                )
            settings = replace(settings, prefix=prefix)
        waits = {"connect_timeout": settings.connect_timeout, "timeout": settings.timeout}
        for key in waits:
            if key in entries:
                value = self.number(entries[key][1], f"state.{key}", minimum=0.0, above=True)
                if value > 5:
                    self.fail(
                        entries[key][1],
                        f"state.{key}",
                        f"{value:g} s is longer than any question should wait for its "
                        "state; at most 5",
                    )
                waits[key] = value
        return path, replace(
            settings, connect_timeout=waits["connect_timeout"], timeout=waits["timeout"]
        )

    def fallback_rate(self, node: Node) -> float:
        rate = self.number(node, "max_fallback_rate", minimum=0.0)
        if rate > 1:
            self.fail(node, "max_fallback_rate", "a share: between 0 and 1 (0.2 means 20 %)")
        return rate

    def policy(self, node: Node, path: str, base: Policy) -> Policy:
        """`base` with the fields given here replaced, then checked as a whole."""
        entries = self.mapping(node, path, _POLICY_KEYS, where=" in a policy")
        retries = base.retries
        times = {
            "backoff_base": base.backoff_base,
            "backoff_max": base.backoff_max,
            "cooldown": base.cooldown,
            "budget": base.budget,
            "timeout": base.timeout,
            "quota_cooldown": base.quota_cooldown,
            "max_cooldown": base.max_cooldown,
            "first_token_timeout": base.first_token_timeout,
            "stall_timeout": base.stall_timeout,
        }
        for key, (_, value) in entries.items():
            key_path = _join(path, key)
            if key == "retries":
                retries = self.gather(
                    retries,
                    partial(self.integer, value, key_path, minimum=0, maximum=MAX_RETRIES),
                )
            else:
                zero_ok = key not in _NONZERO_TIMES
                times[key] = self.gather(
                    times[key],
                    partial(self.number, value, key_path, minimum=0.0, above=not zero_ok),
                )
        merged = Policy(retries=retries, **times)
        if merged.backoff_max < merged.backoff_base:
            key = "backoff_max" if "backoff_max" in entries else "backoff_base"
            at = entries[key][1] if key in entries else node
            self.note(
                at,
                _join(path, key),
                f"backoff_max ({merged.backoff_max:g}) is less than backoff_base "
                f"({merged.backoff_base:g}); the cap must be at least the first delay",
            )
        for longer in ("cooldown", "quota_cooldown"):
            if getattr(merged, longer) > merged.max_cooldown:
                key = longer if longer in entries else "max_cooldown"
                at = entries[key][1] if key in entries else node
                self.fail(
                    at,
                    _join(path, key),
                    f"{longer} ({getattr(merged, longer):g}) is more than max_cooldown "
                    f"({merged.max_cooldown:g}); no cooldown lasts longer than max_cooldown",
                )
        return merged

    def deployment(self, node: Node, path: str, policy: Policy, seen: dict[str, str]) -> Deployment:
        known = len(self.problems)
        entries = self.mapping(node, path, _DEPLOYMENT_KEYS, where=" in a deployment")

        def get(key: str) -> Node | None:
            return entries[key][1] if key in entries else None

        name = self.gather("", partial(self.deployment_name, entries, node, path, seen))
        provider = self.gather(None, partial(self.provider_kind, entries, node, path))
        context_window = self.gather(
            1,
            lambda: self.integer(
                self.required(entries, "context_window", node, path),
                f"{path}.context_window",
                minimum=1,
            ),
        )
        model = self.gather(None, lambda: self.optional_text(get("model"), f"{path}.model"))
        no_keys: tuple[str, ...] = ()
        key_envs = self.gather(
            no_keys, lambda: self.api_key_envs(get("api_key_env"), f"{path}.api_key_env")
        )
        key_strategy = self.gather(
            KeyStrategy.IN_ORDER,
            lambda: self.key_strategy(get("key_strategy"), f"{path}.key_strategy"),
        )
        base_url = self.gather(None, lambda: self.base_url(get("base_url"), f"{path}.base_url"))
        api_version = self.gather(
            None, lambda: self.optional_text(get("api_version"), f"{path}.api_version")
        )
        no_headers: tuple[tuple[str, str], ...] = ()
        headers = self.gather(no_headers, lambda: self.headers(get("headers"), f"{path}.headers"))
        price = self.gather(None, lambda: self.price(get("price"), f"{path}.price"))
        own_policy = policy
        policy_node = get("policy")
        if policy_node is not None and not self.is_null(policy_node):
            own_policy = self.gather(
                policy, partial(self.policy, policy_node, f"{path}.policy", policy)
            )

        if provider is None:
            provider = ProviderKind.LOCAL  # a stand-in: the problem is reported
        elif len(self.problems) == known:
            # Which fields go together is judged only on fields that are right themselves: a
            # misspelt `modle` must not also be reported as a missing model.
            check = partial(self.check_provider_fields, provider, entries, node, path)
            self.gather(None, partial(check, base_url=base_url))
        return Deployment(
            name=name,
            provider=provider,
            context_window=context_window,
            policy=own_policy,
            model=model,
            api_key_env=key_envs[0] if key_envs else None,
            api_key_envs=key_envs if len(key_envs) > 1 else (),
            key_strategy=key_strategy,
            base_url=base_url,
            api_version=api_version,
            headers=headers,
            price=price,
        )

    def price(self, node: Node | None, path: str) -> Price | None:
        """`{input_per_mtok, output_per_mtok}`: dollars per million tokens, both given."""
        if node is None or self.is_null(node):
            return None
        entries = self.mapping(node, path, _PRICE_KEYS, where=" in a price")
        rates = [
            self.number(self.required(entries, key, node, path), f"{path}.{key}", minimum=0.0)
            for key in _PRICE_KEYS
        ]
        return Price(*rates)

    def deployment_name(
        self, entries: dict[str, Pair], node: Node, path: str, seen: dict[str, str]
    ) -> str:
        name_node = self.required(entries, "name", node, path)
        name = self.text(name_node, f"{path}.name")
        if not re.match(_DEPLOYMENT_NAME, name):
            self.fail(
                name_node,
                f"{path}.name",
                f"{name!r} is not a usable name: letters, digits, '-', '_' and '.' only "
                "(it is typed on the command line and keys the cooldown state)",
            )
        if name in seen:
            self.fail(name_node, f"{path}.name", f"{name!r} is already the name of {seen[name]}")
        seen[name] = path
        return name

    def provider_kind(self, entries: dict[str, Pair], node: Node, path: str) -> ProviderKind:
        provider_node = self.required(entries, "provider", node, path)
        provider_text = self.text(provider_node, f"{path}.provider")
        valid = [kind.value for kind in ProviderKind]
        if provider_text not in valid:
            import difflib

            close = difflib.get_close_matches(provider_text, valid, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(
                provider_node,
                f"{path}.provider",
                f"unknown provider {provider_text!r}{hint}; valid: {', '.join(valid)}",
            )
        return ProviderKind(provider_text)

    def check_provider_fields(
        self,
        provider: ProviderKind,
        entries: dict[str, Pair],
        node: Node,
        path: str,
        *,
        base_url: str | None,
    ) -> None:
        """Combinations that can never work are errors now, not a failed call later."""
        given = {k for k, (_, v) in entries.items() if not self.is_null(v)}
        if provider is ProviderKind.LOCAL:
            for key in ("api_key_env", "base_url", "api_version", "headers"):
                if key in given:
                    self.fail(
                        entries[key][0],
                        f"{path}.{key}",
                        "the local provider needs no key and no network; remove this key",
                    )
            return
        if "model" not in given:
            self.fail(node, f"{path}.model", f"missing; {provider} deployments need a model")
        if provider is not ProviderKind.AZURE and "api_version" in given:
            self.fail(
                entries["api_version"][0],
                f"{path}.api_version",
                "only azure deployments take api_version; remove it",
            )
        if provider is ProviderKind.AZURE:
            for key, what in (
                ("base_url", "the resource endpoint, https://<resource>.openai.azure.com"),
                ("api_version", "the API version, e.g. 2024-10-21"),
            ):
                if key not in given:
                    self.fail(node, f"{path}.{key}", f"missing; azure needs {what}")
        # An OpenAI-compatible server of one's own may need no key; the hosted APIs always do.
        needs_key = not (provider is ProviderKind.OPENAI and base_url is not None)
        if needs_key and "api_key_env" not in given:
            self.fail(
                node,
                f"{path}.api_key_env",
                f"missing; name the environment variable that holds the {provider} key",
            )

    def api_key_envs(self, node: Node | None, path: str) -> tuple[str, ...]:
        """One key variable, or a list of them (tried in order, or round robin)."""
        from yaml import SequenceNode

        if not isinstance(node, SequenceNode):
            one = self.api_key_env(node, path)
            return () if one is None else (one,)
        if not node.value:
            self.fail(node, path, "the list is empty; name at least one key variable")
        names: list[str] = []
        for i, item in enumerate(node.value):
            name = self.api_key_env(item, f"{path}[{i}]")
            if name is None:
                self.fail(item, f"{path}[{i}]", "expected a variable name, got nothing")
            if name in names:
                self.fail(item, f"{path}[{i}]", f"{name} is listed twice; list each key once")
            names.append(name)
        return tuple(names)

    def key_strategy(self, node: Node | None, path: str) -> KeyStrategy:
        text = self.optional_text(node, path)
        if text is None:
            return KeyStrategy.IN_ORDER
        assert node is not None  # there is text
        valid = [s.value for s in KeyStrategy]
        if text not in valid:
            self.fail(node, path, f"expected one of {', '.join(valid)}, got {text!r}")
        return KeyStrategy(text)

    def api_key_env(self, node: Node | None, path: str) -> str | None:
        value = self.optional_text(node, path, secret=True)
        if value is None or node is None:
            return None
        if looks_like_a_key(value):
            self.fail(
                node,
                path,
                "this looks like an API key itself (not shown); put the key in an environment "
                "variable and write that variable's name here, e.g. OPENAI_API_KEY",
            )
        if not re.match(_ENV_NAME, value):
            self.fail(
                node,
                path,
                "not an environment variable name (value not shown): letters, digits and "
                "'_', not starting with a digit, e.g. OPENAI_API_KEY",
            )
        return value

    def base_url(self, node: Node | None, path: str) -> str | None:
        """An http(s) URL the API paths are appended to: no credentials in it (they would
        be printed, logged and cached as config), no query or fragment (the appended path
        would land inside them), a host and a usable port. The URL is never echoed whole:
        an error shows at most its scheme and host."""
        value = self.optional_text(node, path, secret=True)
        if value is None or node is None:
            return None
        problem = _url_problem(value.strip())
        if problem is not None:
            self.fail(node, path, problem)
        return value.strip().rstrip("/")

    def headers(self, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
        if node is None or self.is_null(node):
            return ()
        from yaml import MappingNode, ScalarNode

        if not isinstance(node, MappingNode):
            self.fail(node, path, f"expected a mapping of header: value, got {self.describe(node)}")
        out: list[tuple[str, str]] = []
        for key_node, value_node in self.pairs(node, path, fold=str.lower):
            if not isinstance(key_node, ScalarNode) or not re.match(
                _HEADER_NAME, str(key_node.value)
            ):
                self.fail(key_node, path, "a header name must be a plain token, e.g. X-Team")
            name = str(key_node.value)
            key_path = f"{path}.{name}"
            if name.lower() in KEY_HEADERS:
                self.fail(
                    key_node,
                    key_path,
                    "credentials never go in the config; the key comes from api_key_env",
                )
            value = self.text(value_node, key_path, secret=True).strip()
            if not (value.isascii() and value.isprintable()):
                # The HTTP library would refuse it at the first call, quoting it whole.
                self.fail(
                    value_node,
                    key_path,
                    "a header value is one line of visible ASCII text (value not shown)",
                )
            out.append((name, value))
        return tuple(out)

    def articles(self, node: Node) -> ArticleSettings:
        from yaml import ScalarNode

        entries = self.mapping(node, "articles", _ARTICLES_KEYS, where=" in articles")
        settings = ArticleSettings()
        for key, (_, value) in entries.items():
            key_path = f"articles.{key}"
            if key == "max_tokens":
                if isinstance(value, ScalarNode) and value.tag != _INT and value.value == "all":
                    settings = replace(settings, max_tokens=None)
                    continue
                if not isinstance(value, ScalarNode) or value.tag != _INT:
                    self.fail(
                        value,
                        key_path,
                        f"expected a whole number of tokens or `all`, got {self.describe(value)}",
                    )
                settings = replace(settings, max_tokens=self.integer(value, key_path, minimum=1))
            else:
                settings = replace(settings, **{key: self.integer(value, key_path, minimum=1)})
        return settings

    def log(self, node: Node) -> LogSettings:
        entries = self.mapping(node, "log", _LOG_KEYS, where=" in log")
        settings = LogSettings()
        changes: dict[str, Any] = {}
        for key, (_, value) in entries.items():
            key_path = f"log.{key}"
            if key in ("enabled", "include_text"):
                check: Callable[[], object] = partial(self.boolean, value, key_path)
            elif key == "max_bytes":
                check = partial(self.integer, value, key_path, minimum=1)
            else:
                check = partial(self.path_value, value, key_path)
            changes[key] = self.gather(getattr(settings, key), check)
        return replace(settings, **changes)

    def privacy(self, node: Node) -> PrivacySettings:
        from yaml import SequenceNode

        entries = self.mapping(node, "privacy", _PRIVACY_KEYS, where=" in privacy")
        settings = PrivacySettings()
        if "mask" in entries:
            mask = self.gather(True, partial(self.boolean, entries["mask"][1], "privacy.mask"))
            settings = replace(settings, mask=mask)
        listed = entries.get("patterns", (None, None))[1]
        if listed is None or self.is_null(listed):
            return settings
        if not isinstance(listed, SequenceNode):
            self.fail(listed, "privacy.patterns", f"expected a list, got {self.describe(listed)}")
        seen: dict[str, str] = {}
        checked = [
            self.gather(None, partial(self.mask_pattern, item, f"privacy.patterns[{i}]", seen))
            for i, item in enumerate(listed.value)
        ]
        return replace(settings, patterns=tuple(p for p in checked if p is not None))

    def mask_pattern(self, node: Node, path: str, seen: dict[str, str]) -> MaskPattern:
        from gateway.answers.masking import Kind, pattern_label

        entries = self.mapping(node, path, _PATTERN_KEYS, where=" in a privacy pattern")
        name_node = self.required(entries, "name", node, path)
        regex_node = self.required(entries, "regex", node, path)
        name = self.text(name_node, f"{path}.name").strip()
        if not re.match(r"[A-Za-z][A-Za-z0-9_ -]*\Z", name):
            self.fail(
                name_node,
                f"{path}.name",
                f"{name!r} cannot name a placeholder: letters, digits, '_', '-' and spaces, "
                "starting with a letter (e.g. customer_id -> [CUSTOMER_ID_1])",
            )
        label = pattern_label(name)
        # A team pattern named as a built-in kind would make its placeholders ambiguous.
        if label in {kind.label for kind in Kind}:
            self.fail(
                name_node,
                f"{path}.name",
                f"{label} is a built-in kind, masked already; name your pattern otherwise",
            )
        if label in seen:
            self.fail(name_node, f"{path}.name", f"the placeholder {label} is {seen[label]}'s too")
        seen[label] = path
        regex = self.text(regex_node, f"{path}.regex")
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            self.fail(regex_node, f"{path}.regex", f"not a regular expression: {exc}")
        if compiled.match(""):
            self.fail(
                regex_node,
                f"{path}.regex",
                "matches the empty text, so it would mask nothing useful; "
                "make it match at least one character",
            )
        return MaskPattern(name=name, regex=regex)
