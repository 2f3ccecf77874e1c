"""Credentials in request headers and URLs, hidden from the `--debug` HTTP log and from
error details."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

# Header names whose values are credentials, and fragments that make any other name suspect
# (a deployment's extra headers may carry a proxy's token).
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie"}
)
_SECRET_FRAGMENTS = ("key", "auth", "token", "secret", "cookie", "password")


@functools.cache
def _secret_query() -> re.Pattern[str]:
    # Compiled on first use: every run builds its redactor from this module, and only the
    # `--debug` HTTP log needs the pattern.
    return re.compile(r"([?&](?:key|api[-_]?key|access_token|token)=)[^&#]*", re.IGNORECASE)


def _is_secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_HEADERS or any(f in low for f in _SECRET_FRAGMENTS)


def secret_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    values: set[str] = set()
    for name, value in headers.items():
        if _is_secret(name):
            values.add(value)
            values.add(value.partition(" ")[2])  # the token after "Bearer "
    # Longest first, so a token is not half-replaced by a shorter one; very short values
    # would scrub ordinary words.
    return tuple(sorted((v for v in values if len(v) >= 8), key=len, reverse=True))


def redact_url(url: str) -> str:
    return _secret_query().sub(r"\1***", url)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): "***" if _is_secret(name) else value for name, value in headers.items()}
