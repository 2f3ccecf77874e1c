"""The config's sections other than its deployments, each read from its YAML node by a
function over the file's `Walk`: the policy (top-level and a deployment's overrides),
the prompt, the state, the attempt log, the fallback rate, the help centre's budget and
what is masked (privacy). Imported only to validate."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.config.model import (
    MAX_RETRIES,
    AnswerSettings,
    ArticleSettings,
    CitationStyle,
    LogSettings,
    MaskPattern,
    Policy,
    PrivacySettings,
    RefreshRule,
    StateSettings,
    Translations,
)
from gateway.config.urls import url_problem
from gateway.config.walk import INT, Walk, join
from gateway.record import fields, replace

if TYPE_CHECKING:
    from collections.abc import Callable

    from yaml import Node

POLICY_KEYS = tuple(f.name for f in fields(Policy))
# A zero here could never make a call (or hear a first token); zero waits are fine.
_NONZERO_TIMES = frozenset({"budget", "timeout", "first_token_timeout", "stall_timeout"})
_STATE_KEYS = ("path", "url", "prefix", "connect_timeout", "timeout")
_LOG_KEYS = tuple(f.name for f in fields(LogSettings))
_ARTICLES_KEYS = tuple(f.name for f in fields(ArticleSettings))
_PRIVACY_KEYS = tuple(f.name for f in fields(PrivacySettings))
_PATTERN_KEYS = tuple(f.name for f in fields(MaskPattern))
_ANSWERS_KEYS = tuple(f.name for f in fields(AnswerSettings))


def read_policy(w: Walk, node: Node, path: str, base: Policy) -> Policy:
    """`base` with the fields given here replaced, then checked as a whole."""
    entries = w.mapping(node, path, POLICY_KEYS, where=" in a policy")
    retries = base.retries
    retry_budget = base.retry_budget
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
        key_path = join(path, key)
        if key == "retry_budget":
            # Retries per first call: more than MAX_RETRIES could never be spent.
            retry_budget = w.gather(
                retry_budget,
                partial(w.number, value, key_path, minimum=0.0),
            )
            if retry_budget > MAX_RETRIES:
                w.note(
                    value,
                    key_path,
                    f"retries per recent first call, from 0 to {MAX_RETRIES} (0.1: one in ten), "
                    f"got {retry_budget:g}",
                )
        elif key == "retries":
            retries = w.gather(
                retries,
                partial(w.integer, value, key_path, minimum=0, maximum=MAX_RETRIES),
            )
        else:
            zero_ok = key not in _NONZERO_TIMES
            times[key] = w.gather(
                times[key],
                partial(w.number, value, key_path, minimum=0.0, above=not zero_ok),
            )
    merged = Policy(retries=retries, retry_budget=retry_budget, **times)
    if merged.backoff_max < merged.backoff_base:
        key = "backoff_max" if "backoff_max" in entries else "backoff_base"
        at = entries[key][1] if key in entries else node
        w.note(
            at,
            join(path, key),
            f"backoff_max ({merged.backoff_max:g}) is less than backoff_base "
            f"({merged.backoff_base:g}); the cap must be at least the first delay",
        )
    for longer in ("cooldown", "quota_cooldown"):
        if getattr(merged, longer) > merged.max_cooldown:
            key = longer if longer in entries else "max_cooldown"
            at = entries[key][1] if key in entries else node
            w.fail(
                at,
                join(path, key),
                f"{longer} ({getattr(merged, longer):g}) is more than max_cooldown "
                f"({merged.max_cooldown:g}); no cooldown lasts longer than max_cooldown",
            )
    return merged


def read_prompt(w: Walk, node: Node | None) -> Path | None:
    prompt = w.path_value(node, "prompt")
    if prompt is not None and node is not None and not prompt.is_file():
        w.fail(
            node,
            "prompt",
            f"no prompt file at {prompt} (a relative path is relative to the config "
            "file's folder); fix the path, or set null for the bundled prompt",
        )
    return prompt


def read_state(w: Walk, node: Node) -> tuple[Path | None, StateSettings]:
    entries = w.mapping(node, "state", _STATE_KEYS, where=" in state")
    path = w.path_value(entries.get("path", (None, None))[1], "state.path")
    settings = StateSettings()
    url_node = entries.get("url", (None, None))[1]
    text = w.optional_text(url_node, "state.url", secret=True)
    if text is not None and url_node is not None:
        from gateway.config.location import SCHEMES, LocationError, RedisURL

        if not text.startswith(SCHEMES):
            w.fail(url_node, "state.url", "expected a redis:// or rediss:// URL")
        try:
            settings = replace(settings, url=RedisURL.parse(text))
        except LocationError as exc:
            w.fail(url_node, "state.url", str(exc))
        if path is not None:
            w.fail(
                url_node,
                "state.url",
                "give state.path or state.url, not both (with Redis down, the local "
                "file is the user state dir's)",
            )
    if "prefix" in entries:
        prefix = w.text(entries["prefix"][1], "state.prefix")
        if not re.match(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z", prefix):
            w.fail(
                entries["prefix"][1],
                "state.prefix",
                f"{prefix!r} is not a usable prefix: letters, digits, '-', '_', '.', ':'",
            )
        settings = replace(settings, prefix=prefix)
    waits = {"connect_timeout": settings.connect_timeout, "timeout": settings.timeout}
    for key in waits:
        if key in entries:
            value = w.number(entries[key][1], f"state.{key}", minimum=0.0, above=True)
            if value > 5:
                w.fail(
                    entries[key][1],
                    f"state.{key}",
                    f"{value:g} s is longer than any question should wait for its state; at most 5",
                )
            waits[key] = value
    return path, replace(
        settings, connect_timeout=waits["connect_timeout"], timeout=waits["timeout"]
    )


def read_fallback_rate(w: Walk, node: Node) -> float:
    rate = w.number(node, "max_fallback_rate", minimum=0.0)
    if rate > 1:
        w.fail(node, "max_fallback_rate", "a share: between 0 and 1 (0.2 means 20 %)")
    return rate


def read_articles(w: Walk, node: Node) -> ArticleSettings:
    from yaml import ScalarNode

    entries = w.mapping(node, "articles", _ARTICLES_KEYS, where=" in articles")
    settings = ArticleSettings()
    for key, (_, value) in entries.items():
        key_path = f"articles.{key}"
        if key == "paths":
            paths = w.gather(settings.paths, partial(_article_paths, w, value, key_path))
            settings = replace(settings, paths=paths)
        elif key == "exclude":
            patterns = w.gather(settings.exclude, partial(_exclude_patterns, w, value, key_path))
            settings = replace(settings, exclude=patterns)
        elif key == "max_tokens":
            if isinstance(value, ScalarNode) and value.tag != INT and value.value == "all":
                settings = replace(settings, max_tokens=None)
                continue
            if not isinstance(value, ScalarNode) or value.tag != INT:
                w.fail(
                    value,
                    key_path,
                    f"expected a whole number of tokens or `all`, got {w.describe(value)}",
                )
            settings = replace(settings, max_tokens=w.integer(value, key_path, minimum=1))
        elif key == "min_relevance":
            share = w.number(value, key_path, minimum=0.0)
            if share > 1:
                w.fail(value, key_path, f"must be from 0 to 1 (a share), got {share:g}")
            settings = replace(settings, min_relevance=share)
        elif key == "url_base":
            url = w.gather(None, partial(_page_url, w, value, key_path))
            settings = replace(settings, url_base=url)
        elif key == "refresh":
            hint = " (`on_index` trusts the index until `support-ask index` runs)"
            rule = w.gather(
                settings.refresh, partial(w.choice, value, key_path, RefreshRule, hint=hint)
            )
            settings = replace(settings, refresh=rule)
        else:
            cap: Any = w.integer(value, key_path, minimum=1)  # a max_* byte or file cap
            settings = replace(settings, **{key: cap})
    return settings


def _texts(w: Walk, node: Node, path: str, what: str) -> list[tuple[Node, str, str]]:
    """One text or a list of them (null: none), each with its node and key path."""
    from yaml import ScalarNode, SequenceNode

    if w.is_null(node):
        return []
    if isinstance(node, ScalarNode):
        return [(node, path, w.text(node, path))]
    if not isinstance(node, SequenceNode):
        w.fail(node, path, f"expected a {what} or a list of them, got {w.describe(node)}")
    if not node.value:
        w.fail(node, path, f"the list is empty; name at least one {what}, or remove it")
    out: list[tuple[Node, str, str]] = []
    for i, item in enumerate(node.value):
        if not isinstance(item, ScalarNode):
            w.fail(item, f"{path}[{i}]", f"expected a {what}, got {w.describe(item)}")
        out.append((item, f"{path}[{i}]", w.text(item, f"{path}[{i}]")))
    return out


def _article_paths(w: Walk, node: Node, path: str) -> tuple[Path, ...]:
    """The help centre's folders or files, joined to the config file's folder."""
    return tuple(
        w.base_dir / Path(text).expanduser() for _, _, text in _texts(w, node, path, "folder")
    )


def _exclude_patterns(w: Walk, node: Node, path: str) -> tuple[str, ...]:
    from gateway.config.globs import BadPattern, translate

    patterns: list[str] = []
    for item, item_path, text in _texts(w, node, path, "pattern"):
        pattern = text.strip()
        try:
            translate(pattern)
        except BadPattern as exc:
            w.fail(
                item,
                item_path,
                f"{pattern!r}: {exc}; write a file or folder name (`genindex.html`), "
                "or a path with * and ** (`**/changelog*`)",
            )
        patterns.append(pattern)
    return tuple(patterns)


def _page_url(w: Walk, node: Node, path: str) -> str | None:
    url = w.optional_text(node, path)
    if url is None:
        return None
    problem = url_problem(
        url.strip(),
        name="articles.url_base",
        appended="an article's path",
        example="https://help.example.com/articles",
        userinfo="a public address holds no user name or password",
    )
    if problem is not None:
        w.fail(node, path, problem)
    return url.strip()


def read_answers(w: Walk, node: Node) -> AnswerSettings:
    entries = w.mapping(node, "answers", _ANSWERS_KEYS, where=" in answers")
    settings = AnswerSettings()
    changes: dict[str, Any] = {}
    for key, (_, value) in entries.items():
        key_path = f"answers.{key}"
        if key == "citations":
            check: Callable[[], object] = partial(
                w.choice,
                value,
                key_path,
                CitationStyle,
                hint=" (`none` leaves the sources to a channel that shows them from the JSON)",
            )
        elif key == "require_citation":
            check = partial(w.boolean, value, key_path)
        elif key == "languages":
            check = partial(_languages, w, value, key_path)
        elif key == "default_language":
            check = partial(_language_code, w, value, key_path)
        elif key == "phrases":
            check = partial(_phrases, w, value, key_path)
        else:
            check = partial(_wording, w, value, key_path, None)
        changes[key] = w.gather(getattr(settings, key), check)
    if "languages" in changes and "default_language" not in entries and changes["languages"]:
        changes["default_language"] = changes["languages"][0]
    settings = replace(settings, **changes)
    w.gather(None, partial(_default_language_listed, w, entries, settings))
    worded = [("handoff_message", settings.handoff_message)]
    worded += [(f"phrases.{name}", text) for name, text in settings.phrases]
    for key, text in worded:
        if isinstance(text, Translations) and text.get(settings.default_language) is None:
            default = settings.default_language
            w.gather(
                None,
                partial(
                    w.fail,
                    entries["phrases" if key.startswith("phrases.") else key][1],
                    f"answers.{key}",
                    f"gives no {default} text, the default language's (what a customer "
                    f"of a language without a text of its own reads): add `{default}: ...`",
                ),
            )
    return settings


def _language_code(w: Walk, node: Node, path: str) -> str:
    from gateway.answers.language import code_problem

    code = w.text(node, path).strip()
    problem = code_problem(code)
    if problem is not None:
        w.fail(node, path, problem)
    return code.lower()


def _languages(w: Walk, node: Node, path: str) -> tuple[str, ...]:
    from yaml import SequenceNode

    if w.is_null(node):
        return ()
    if not isinstance(node, SequenceNode) or not node.value:
        w.fail(
            node,
            path,
            f"expected a list of ISO 639-1 codes such as [en, de], got {w.describe(node)} "
            "(leave the key out for any language)",
        )
    codes: list[str] = []
    for i, item in enumerate(node.value):
        code = w.gather(None, partial(_language_code, w, item, f"{path}[{i}]"))
        if code in codes:
            w.note(item, f"{path}[{i}]", f"{code} is listed twice; keep one")
        elif code is not None:
            codes.append(code)
    return tuple(codes)


def _default_language_listed(w: Walk, entries: dict[str, Any], settings: AnswerSettings) -> None:
    listed = settings.languages
    if "default_language" not in entries or not listed or settings.default_language in listed:
        return
    code = settings.default_language
    w.fail(
        entries["default_language"][1],
        "answers.default_language",
        f"{code} is not one of answers.languages ({', '.join(listed)}): add {code} to "
        "answers.languages, or make the default one of them",
    )


def _wording(w: Walk, node: Node, path: str, phrase: str | None) -> str | Translations | None:
    """A fixed phrase as the config words it: one text for every language, or a map by
    language; `phrase` names the one it words (None: the handoff message)."""
    from yaml import MappingNode

    if not isinstance(node, MappingNode):
        text = w.optional_text(node, path)
        return None if text is None else _phrase_text(w, node, path, phrase, text)
    texts: list[tuple[str, str]] = []
    for key_node, value_node in w.pairs(node, path):
        where = f"{path}.{key_node.value}"
        code = w.gather(None, partial(_language_code, w, key_node, where))
        text = w.gather(None, partial(w.text, value_node, where))
        if code is not None and text is not None:
            texts.append((code, _phrase_text(w, value_node, where, phrase, text)))
    return Translations(tuple(texts))


def _phrase_text(w: Walk, node: Node, path: str, phrase: str | None, text: str) -> str:
    from gateway.answers.phrases import Phrase, missing_placeholders

    text = " ".join(text.split())
    missing = () if phrase is None else missing_placeholders(Phrase(phrase), text)
    if missing:
        needed = ", ".join("{" + name + "}" for name in missing)
        w.fail(node, path, f"must hold {needed}, where it is filled in")
    return text


def _phrases(w: Walk, node: Node, path: str) -> tuple[tuple[str, str | Translations], ...]:
    from gateway.answers.phrases import CONFIGURABLE

    if w.is_null(node):
        return ()
    names = [str(p) for p in CONFIGURABLE]
    entries = w.mapping(
        node,
        path,
        names,
        where=" in answers.phrases (the handoff's sentence is answers.handoff_message)",
    )
    worded = []
    for name, (_, value) in entries.items():
        text = w.gather(None, partial(_wording, w, value, f"{path}.{name}", name))
        if text is not None:
            worded.append((name, text))
    return tuple(worded)


def read_log(w: Walk, node: Node) -> LogSettings:
    entries = w.mapping(node, "log", _LOG_KEYS, where=" in log")
    settings = LogSettings()
    changes: dict[str, Any] = {}
    for key, (_, value) in entries.items():
        key_path = f"log.{key}"
        if key in ("enabled", "include_text"):
            check: Callable[[], object] = partial(w.boolean, value, key_path)
        elif key == "max_bytes":
            check = partial(w.integer, value, key_path, minimum=1)
        else:
            check = partial(w.path_value, value, key_path)
        changes[key] = w.gather(getattr(settings, key), check)
    return replace(settings, **changes)


def read_privacy(w: Walk, node: Node) -> PrivacySettings:
    from yaml import SequenceNode

    entries = w.mapping(node, "privacy", _PRIVACY_KEYS, where=" in privacy")
    settings = PrivacySettings()
    if "mask" in entries:
        mask = w.gather(True, partial(w.boolean, entries["mask"][1], "privacy.mask"))
        settings = replace(settings, mask=mask)
    listed = entries.get("patterns", (None, None))[1]
    if listed is None or w.is_null(listed):
        return settings
    if not isinstance(listed, SequenceNode):
        w.fail(listed, "privacy.patterns", f"expected a list, got {w.describe(listed)}")
    seen: dict[str, str] = {}
    checked = [
        w.gather(None, partial(_mask_pattern, w, item, f"privacy.patterns[{i}]", seen))
        for i, item in enumerate(listed.value)
    ]
    return replace(settings, patterns=tuple(p for p in checked if p is not None))


def _mask_pattern(w: Walk, node: Node, path: str, seen: dict[str, str]) -> MaskPattern:
    from gateway.answers.masking import Kind, pattern_label

    entries = w.mapping(node, path, _PATTERN_KEYS, where=" in a privacy pattern")
    name_node = w.required(entries, "name", node, path)
    regex_node = w.required(entries, "regex", node, path)
    name = w.text(name_node, f"{path}.name").strip()
    if not re.match(r"[A-Za-z][A-Za-z0-9_ -]*\Z", name):
        w.fail(
            name_node,
            f"{path}.name",
            f"{name!r} cannot name a placeholder: letters, digits, '_', '-' and spaces, "
            "starting with a letter (e.g. customer_id -> [CUSTOMER_ID_1])",
        )
    label = pattern_label(name)
    # A team pattern named as a built-in kind would make its placeholders ambiguous.
    if label in {kind.label for kind in Kind}:
        w.fail(
            name_node,
            f"{path}.name",
            f"{label} is a built-in kind, masked already; name your pattern otherwise",
        )
    if label in seen:
        w.fail(name_node, f"{path}.name", f"the placeholder {label} is {seen[label]}'s too")
    seen[label] = path
    regex = w.text(regex_node, f"{path}.regex")
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        w.fail(regex_node, f"{path}.regex", f"not a regular expression: {exc}")
    if compiled.match(""):
        w.fail(
            regex_node,
            f"{path}.regex",
            "matches the empty text, so it would mask nothing useful; "
            "make it match at least one character",
        )
    return MaskPattern(name=name, regex=regex)
