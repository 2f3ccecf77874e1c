"""What a secret looks like, decided here once, and the one placeholder that replaces it.

A secret is recognised in two ways. By value: the run's own keys, whatever their shape
(`gateway.secrets.redactor`). By shape, here: text that looks like a credential, whoever's
it is (a provider echoing a key back, a proxy's token in a library's message). Every
channel asks this module: the classifier's error details, the `-v`/`--debug` log, the
`--debug` HTTP log, stderr, the config validator (which refuses a credential in the file)
and the Redis messages. A shape added here is therefore caught by all of them.

Patterns are compiled on first use and cached: a question that goes well scrubs nothing by
shape, and compiling them all costs a few million instructions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

# What every redacted secret reads as, in every output.
PLACEHOLDER = "***"

# How real API keys begin (OpenAI sk-/sk-proj-, Anthropic sk-ant-, OpenRouter sk-or-,
# Google AIza, Groq gsk_, xAI xai-, Hugging Face hf_, and the sk_ of other services).
KEY_PREFIXES = ("sk-", "sk_", "AIza", "gsk_", "xai-", "hf_")
# The characters a key is made of, masking asterisks included: a provider that echoes a
# key masked ("sk-abc***xyz") still gives away a fingerprint of it.
_KEY_CHARS = r"[A-Za-z0-9_*-]"
# The least that must follow a prefix for the text to be a key rather than a word.
_KEY_TAIL = 4
# Azure's keys: 32 hexadecimal digits, standing alone.
_HEX_KEY = r"\b[0-9a-fA-F]{32}\b"

# Headers that carry a provider's key: the config refuses them (a key comes from an
# environment variable named by api_key_env, never from the file).
KEY_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "x-goog-api-key"})
# Headers whose value is a secret wherever it is written.
SECRET_HEADERS = KEY_HEADERS | {"proxy-authorization", "cookie"}
# Fragments that make any other header name, or a URL's query parameter, a credential's
# (a deployment's extra headers may carry a proxy's token; `?access_token=`, `?sig=`).
CREDENTIAL_WORDS = ("key", "token", "secret", "passw", "pwd", "auth", "sig", "credential", "cookie")
# Config keys under which someone is pasting a key into the file.
CREDENTIAL_FIELDS = frozenset({"api_key", "apikey", "key", "token", "secret", "password"})

# A known value shorter than this is not scrubbed: it would cut ordinary words out of
# answers, and no provider's key is that short.
MIN_SECRET = 8


def looks_like_a_key(value: str) -> bool:
    """Whether a whole value (a config entry, a query value) is a key itself."""
    if value.startswith(KEY_PREFIXES):
        return True
    # Long, mixed-case, digits, no underscore: a token, not a variable name like OPENAI_API_KEY.
    return (
        len(value) >= 30
        and "_" not in value
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and any(c.isupper() for c in value)
    )


def is_secret_header(name: str) -> bool:
    low = name.lower()
    return low in SECRET_HEADERS or any(word in low for word in CREDENTIAL_WORDS)


def is_credential_param(name: str) -> bool:
    """Whether a URL's query parameter of this name carries a credential."""
    low = name.lower()
    return any(word in low for word in CREDENTIAL_WORDS)


def secret_header_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `headers` that are secrets, and the token after an auth scheme
    ("Bearer t" gives t too), longest first, none shorter than MIN_SECRET."""
    values: set[str] = set()
    for name, value in headers.items():
        if is_secret_header(name):
            values.add(value)
            values.add(value.partition(" ")[2])
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET), key=len, reverse=True))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers as the `--debug` HTTP log shows them: names lowered, secrets replaced."""
    return {
        name.lower(): PLACEHOLDER if is_secret_header(name) else value
        for name, value in headers.items()
    }


def redact_url(url: str) -> str:
    """`url` with the value of every credential query parameter replaced."""
    return _credential_query().sub(_keep_label, url)


def redact_text(text: str) -> str:
    """`text` with everything shaped like a credential replaced, what names it kept:
    `?key=***`, `x-api-key: ***`, `Bearer ***`, and a key standing alone as `***`."""
    if not _may_hold_one(text):
        return text
    for pattern in _text_patterns():
        text = pattern.sub(_keep_label, text)
    return text


def url_passwords(url: str) -> tuple[str, ...]:
    """The password in a URL's userinfo (scheme://user:password@host), as written
    (percent-encoded) and as sent; none when there is none or the URL is not one."""
    if "@" not in url:
        return ()
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url.strip()).password
    except ValueError:
        return ()
    return (password, unquote(password)) if password else ()


def has_userinfo(netloc: str) -> bool:
    """Whether a URL's network location carries a user name or password (user:pw@host)."""
    return "@" in netloc


def _may_hold_one(text: str) -> bool:
    """Whether `text` could match one of `_text_patterns`, by plain string search: true of
    every text a pattern matches, so that a line with none (most of what stderr carries)
    compiles and runs no pattern. Each test mirrors one pattern, in their order."""
    low = text.lower()
    return (
        "=" in text
        or any(name in low for name in SECRET_HEADERS)
        or "bearer" in low
        or any(prefix in text for prefix in KEY_PREFIXES)
        or _hex_run(text)
    )


def _hex_run(text: str) -> bool:
    """Whether `text` holds 32 hexadecimal digits in a row (`_HEX_KEY`, less its word
    boundaries): every other byte becomes a space, and the longest piece left is measured."""
    if len(text) < 32:
        return False
    pieces = text.encode("utf-8", "replace").translate(_ONLY_HEX).split()
    return max(map(len, pieces), default=0) >= 32


# A byte table keeping the hexadecimal digits (0-9 at 48, A-F at 65, a-f at 97) and making
# every other byte a space.
_ONLY_HEX = b" " * 48 + b"0123456789" + b" " * 7 + b"ABCDEF" + b" " * 26 + b"abcdef" + b" " * 153


def _keep_label(match: re.Match[str]) -> str:
    return match.group(1) + PLACEHOLDER


def _alternatives(words: Iterable[str]) -> str:
    # Longest first, so "x-api-key" is matched whole rather than as "api-key".
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


@functools.cache
def _credential_query() -> re.Pattern[str]:
    words = _alternatives(CREDENTIAL_WORDS)
    return re.compile(rf"(?i)([?&][\w.~-]*(?:{words})[\w.~-]*=)[^&#\s'\"]+")


@functools.cache
def _text_patterns() -> tuple[re.Pattern[str], ...]:
    """Each pattern's first group is what names the secret, kept; the rest is replaced."""
    headers = _alternatives(SECRET_HEADERS)
    prefixes = _alternatives(KEY_PREFIXES)
    # A header as a log or a message writes it: `x-api-key: v`, `'api-key': 'v'`, or the
    # `(b'x-api-key', b'v')` of a header list's repr; an auth scheme's word is kept.
    separator = r"(?:['\"]?\s*[:=]|['\"]\s*,)\s*(?:b?['\"])?"
    return (
        _credential_query(),
        re.compile(rf"(?i)(\b(?:{headers}){separator}(?:(?:bearer|basic)\s+)?)[^\s'\",)]+"),
        # At least 8 characters: "bearer of" is a word, not a token.
        re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=*-]{8,}"),
        re.compile(rf"()\b(?:{prefixes}){_KEY_CHARS}{{{_KEY_TAIL},}}"),
        re.compile(rf"(){_HEX_KEY}"),
    )
