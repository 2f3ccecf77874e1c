"""The config's deployments: each one read from its YAML node (name, provider, model, key
variables, base_url, headers, price, policy overrides) and checked as a whole (which
fields a provider needs and refuses). A credential is refused wherever it is pasted, by
the shapes `gateway.secrets.shapes` defines, and never echoed. Imported only to validate."""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING

from gateway.config.limits import read_limits
from gateway.config.model import OFFLINE_WINDOW, Deployment, KeyStrategy, Policy, Price
from gateway.config.sections import POLICY_KEYS, read_policy
from gateway.config.urls import url_problem
from gateway.config.walk import Walk
from gateway.model import ProviderKind
from gateway.record import fields
from gateway.secrets.shapes import KEY_HEADERS, is_credential_param, looks_like_a_key

if TYPE_CHECKING:
    from yaml import Node

    from gateway.config.walk import Pair

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
    "limits",
)
_PRICE_KEYS = tuple(f.name for f in fields(Price))

# Patterns, compiled (and cached by `re`) only when a file is validated: a cached config
# needs none of them.
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"
_DEPLOYMENT_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z"
_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z"

_USE_KEY_ENV = (
    "credentials never go in the config: put the key in an environment variable and name "
    "that variable with api_key_env"
)


def _url_problem(url: str) -> str | None:
    """What keeps `url` from being a base_url, in words that quote no secret it holds: a
    credential in its query is named as one, the rest is the rule of `urls`."""
    from urllib.parse import parse_qsl, urlsplit

    try:
        query = urlsplit(url).query
    except ValueError:
        query = ""
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(is_credential_param(n.lower()) or looks_like_a_key(v) for n, v in pairs):
        return f"holds a credential in its query (?key=...); {_USE_KEY_ENV}"
    return url_problem(
        url,
        name="a base_url",
        appended="the API path",
        example="https://api.example.com/v1",
        userinfo=_USE_KEY_ENV,
    )


def read_deployments(
    w: Walk, top: dict[str, Pair], root: Node, policy: Policy, seen: dict[str, str]
) -> tuple[Deployment, ...]:
    from yaml import SequenceNode

    list_node = w.required(top, "deployments", root, "")
    if not isinstance(list_node, SequenceNode):
        w.fail(list_node, "deployments", f"expected a list, got {w.describe(list_node)}")
    if not list_node.value:
        w.fail(
            list_node,
            "deployments",
            "the list is empty; add at least one deployment (the offline one: "
            "`- {name: local, provider: local}`)",
        )
    checked = [
        w.gather(None, partial(read_deployment, w, item, f"deployments[{i}]", policy, seen))
        for i, item in enumerate(list_node.value)
    ]
    return tuple(d for d in checked if d is not None)


def read_deployment(
    w: Walk, node: Node, path: str, policy: Policy, seen: dict[str, str]
) -> Deployment:
    known = len(w.problems)
    # Policy overrides live in a nested `policy:` mapping only, so a key in a deployment
    # means one thing; a flat `retries:` there is an error that shows the nested form.
    entries = w.mapping(node, path, _DEPLOYMENT_KEYS, where=" in a deployment", nested=POLICY_KEYS)

    def get(key: str) -> Node | None:
        return entries[key][1] if key in entries else None

    name = w.gather("", partial(_name, w, entries, node, path, seen))
    provider = w.gather(None, partial(_provider, w, entries, node, path))
    if provider is ProviderKind.LOCAL and get("context_window") is None:
        context_window = OFFLINE_WINDOW  # it has none: it always gets the whole prompt
    else:
        context_window = w.gather(
            1,
            lambda: w.integer(
                w.required(entries, "context_window", node, path),
                f"{path}.context_window",
                minimum=1,
            ),
        )
    model = w.gather(None, lambda: w.optional_text(get("model"), f"{path}.model"))
    no_keys: tuple[str, ...] = ()
    key_envs = w.gather(
        no_keys, lambda: _key_variables(w, get("api_key_env"), f"{path}.api_key_env")
    )
    key_strategy = w.gather(
        KeyStrategy.IN_ORDER,
        lambda: _key_strategy(w, get("key_strategy"), f"{path}.key_strategy"),
    )
    base_url = w.gather(None, lambda: _base_url(w, get("base_url"), f"{path}.base_url"))
    api_version = w.gather(None, lambda: w.optional_text(get("api_version"), f"{path}.api_version"))
    no_headers: tuple[tuple[str, str], ...] = ()
    headers = w.gather(no_headers, lambda: _headers(w, get("headers"), f"{path}.headers"))
    price = w.gather(None, lambda: _price(w, get("price"), f"{path}.price"))
    limits = w.gather(None, lambda: read_limits(w, get("limits"), f"{path}.limits"))
    own_policy = policy
    policy_node = get("policy")
    if policy_node is not None and not w.is_null(policy_node):
        own_policy = w.gather(
            policy, partial(read_policy, w, policy_node, f"{path}.policy", policy)
        )

    if provider is None:
        provider = ProviderKind.LOCAL  # a stand-in: the problem is reported
    elif len(w.problems) == known:
        # Which fields go together is judged only on fields that are right themselves: a
        # misspelt `modle` must not also be reported as a missing model.
        check = partial(_provider_fields, w, provider, entries, node, path)
        w.gather(None, partial(check, base_url=base_url))
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
        limits=limits,
    )


def _price(w: Walk, node: Node | None, path: str) -> Price | None:
    """`{input_per_mtok, output_per_mtok}`: dollars per million tokens, both given; and
    `batch_discount`, a share from 0 to 1 (default: half off)."""
    if node is None or w.is_null(node):
        return None
    entries = w.mapping(node, path, _PRICE_KEYS, where=" in a price")
    rates = [
        w.number(w.required(entries, key, node, path), f"{path}.{key}", minimum=0.0)
        for key in ("input_per_mtok", "output_per_mtok")
    ]
    discount = Price(0.0, 0.0).batch_discount
    if "batch_discount" in entries:
        value_node = entries["batch_discount"][1]
        discount = w.number(value_node, f"{path}.batch_discount", minimum=0.0)
        if discount > 1:
            w.fail(
                value_node,
                f"{path}.batch_discount",
                f"{discount:g} is more than the whole price: a share from 0 to 1 "
                "(0.5 for half off)",
            )
    return Price(rates[0], rates[1], batch_discount=discount)


def _name(w: Walk, entries: dict[str, Pair], node: Node, path: str, seen: dict[str, str]) -> str:
    name_node = w.required(entries, "name", node, path)
    name = w.text(name_node, f"{path}.name")
    if not re.match(_DEPLOYMENT_NAME, name):
        w.fail(
            name_node,
            f"{path}.name",
            f"{name!r} is not a usable name: letters, digits, '-', '_' and '.' only "
            "(it is typed on the command line and keys the cooldown state)",
        )
    if name in seen:
        w.fail(name_node, f"{path}.name", f"{name!r} is already the name of {seen[name]}")
    seen[name] = path
    return name


def _provider(w: Walk, entries: dict[str, Pair], node: Node, path: str) -> ProviderKind:
    provider_node = w.required(entries, "provider", node, path)
    provider_text = w.text(provider_node, f"{path}.provider")
    valid = [kind.value for kind in ProviderKind]
    if provider_text not in valid:
        import difflib

        close = difflib.get_close_matches(provider_text, valid, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        w.fail(
            provider_node,
            f"{path}.provider",
            f"unknown provider {provider_text!r}{hint}; valid: {', '.join(valid)}",
        )
    return ProviderKind(provider_text)


def _provider_fields(
    w: Walk,
    provider: ProviderKind,
    entries: dict[str, Pair],
    node: Node,
    path: str,
    *,
    base_url: str | None,
) -> None:
    """Combinations that can never work are errors now, not a failed call later."""
    given = {k for k, (_, v) in entries.items() if not w.is_null(v)}
    if provider is ProviderKind.LOCAL:
        for key in ("api_key_env", "base_url", "api_version", "headers"):
            if key in given:
                w.fail(
                    entries[key][0],
                    f"{path}.{key}",
                    "the local provider needs no key and no network; remove this key",
                )
        return
    if "model" not in given:
        w.fail(node, f"{path}.model", f"missing; {provider} deployments need a model")
    if provider is not ProviderKind.AZURE and "api_version" in given:
        w.fail(
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
                w.fail(node, f"{path}.{key}", f"missing; azure needs {what}")
    # An OpenAI-compatible server of one's own may need no key; the hosted APIs always do.
    needs_key = not (provider is ProviderKind.OPENAI and base_url is not None)
    if needs_key and "api_key_env" not in given:
        w.fail(
            node,
            f"{path}.api_key_env",
            f"missing; name the environment variable that holds the {provider} key",
        )


def _key_variables(w: Walk, node: Node | None, path: str) -> tuple[str, ...]:
    """One key variable, or a list of them (tried in order, or round robin)."""
    from yaml import SequenceNode

    if not isinstance(node, SequenceNode):
        one = _key_variable(w, node, path)
        return () if one is None else (one,)
    if not node.value:
        w.fail(node, path, "the list is empty; name at least one key variable")
    names: list[str] = []
    for i, item in enumerate(node.value):
        name = _key_variable(w, item, f"{path}[{i}]")
        if name is None:
            w.fail(item, f"{path}[{i}]", "expected a variable name, got nothing")
        if name in names:
            w.fail(item, f"{path}[{i}]", f"{name} is listed twice; list each key once")
        names.append(name)
    return tuple(names)


def _key_strategy(w: Walk, node: Node | None, path: str) -> KeyStrategy:
    if node is None or w.is_null(node):
        return KeyStrategy.IN_ORDER
    return w.choice(node, path, KeyStrategy)


def _key_variable(w: Walk, node: Node | None, path: str) -> str | None:
    value = w.optional_text(node, path, secret=True)
    if value is None or node is None:
        return None
    if looks_like_a_key(value):
        w.fail(
            node,
            path,
            "this looks like an API key itself (not shown); put the key in an environment "
            "variable and write that variable's name here, e.g. OPENAI_API_KEY",
        )
    if not re.match(_ENV_NAME, value):
        w.fail(
            node,
            path,
            "not an environment variable name (value not shown): letters, digits and "
            "'_', not starting with a digit, e.g. OPENAI_API_KEY",
        )
    return value


def _base_url(w: Walk, node: Node | None, path: str) -> str | None:
    """An http(s) URL the API paths are appended to: no credentials in it (they would
    be printed, logged and cached as config), no query or fragment (the appended path
    would land inside them), a host and a usable port. The URL is never echoed whole:
    an error shows at most its scheme and host."""
    value = w.optional_text(node, path, secret=True)
    if value is None or node is None:
        return None
    problem = _url_problem(value.strip())
    if problem is not None:
        w.fail(node, path, problem)
    return value.strip().rstrip("/")


def _headers(w: Walk, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
    if node is None or w.is_null(node):
        return ()
    from yaml import MappingNode, ScalarNode

    if not isinstance(node, MappingNode):
        w.fail(node, path, f"expected a mapping of header: value, got {w.describe(node)}")
    out: list[tuple[str, str]] = []
    for key_node, value_node in w.pairs(node, path, fold=str.lower):
        if not isinstance(key_node, ScalarNode) or not re.match(_HEADER_NAME, str(key_node.value)):
            w.fail(key_node, path, "a header name must be a plain token, e.g. X-Team")
        name = str(key_node.value)
        key_path = f"{path}.{name}"
        if name.lower() in KEY_HEADERS:
            w.fail(
                key_node,
                key_path,
                "credentials never go in the config; the key comes from api_key_env",
            )
        value = w.text(value_node, key_path, secret=True).strip()
        if not (value.isascii() and value.isprintable()):
            # The HTTP library would refuse it at the first call, quoting it whole.
            w.fail(
                value_node,
                key_path,
                "a header value is one line of visible ASCII text (value not shown)",
            )
        out.append((name, value))
    return tuple(out)
