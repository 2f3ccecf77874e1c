"""Server-directed waits, in every form providers send them.

Pure functions: the caller passes `now` (epoch seconds), so an HTTP-date is read against
the same clock the engine budgets with and tests need no real time. Whether a wait fits
the remaining budget is the engine's business, not this module's: here we only read what
the server said.

Forms understood:
- headers: `retry-after-ms` (float milliseconds; Azure, OpenAI), `retry-after` as float
  seconds, `retry-after` as an HTTP-date (RFC 9110);
- bodies: Gemini `google.rpc.RetryInfo.retryDelay` ("26s", "2.463586755s");
- messages: "Please retry in 58.93s." (Gemini), "Please try again in 644ms." (OpenAI),
  "Please try again in 9m38.016s." (Groq, a Go duration), "Please retry after 6 seconds."
  (Azure).
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterator, Mapping
from email.utils import parsedate_tz

MAX_RETRY_AFTER = 7 * 24 * 3600.0
"""The longest wait we pass on. A finite but absurd value (a year, 1e300) still means "not
soon", so it is clamped rather than dropped; the clamp keeps `now + wait` arithmetic (a
cooldown's end time) sane."""

RETRY_INFO_TYPE_SUFFIX = "google.rpc.RetryInfo"

_UNIT_SECONDS: Mapping[str, float] = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,  # Go prints the micro sign (U+00B5)
    "μs": 1e-6,  # and some servers the Greek mu (U+03BC)
    "ns": 1e-9,
}
# One "<number><unit>" piece of a Go/protobuf duration. Two-letter units come first so that
# "ms" is not read as minutes followed by a stray "s".
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|h|m|s)")

_WORD_UNIT_SECONDS: Mapping[str, float] = {
    "millisecond": 1e-3,
    "second": 1.0,
    "sec": 1.0,
    "minute": 60.0,
    "min": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
}
# "try again in 644ms", "retry in 58.9s", "retry after 6 seconds", "try again in 2 minutes",
# "your quota resets in 3 hours".
_MESSAGE_DELAY = re.compile(
    r"(?:try\s+again|retry|resets?)\s+(?:in|after)\s+"
    r"(?:(?P<go>(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|h|m|s))+)(?!\w)"
    r"|(?P<num>\d+(?:\.\d+)?)\s*(?P<word>millisecond|second|sec|minute|min|hour|day)s?\b)",
    re.IGNORECASE,
)


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait named by the response headers, in seconds, or None when there is none.

    Tried in the order the OpenAI/Anthropic SDKs use: `retry-after-ms`, then `retry-after`
    as seconds, then `retry-after` as an HTTP-date (relative to `now`; a past date is 0.0).
    A value that is negative, NaN, infinite or unparseable does not count.
    """
    ms = _number(header_value(headers, "retry-after-ms"))
    if ms is not None:
        return _clamp(ms / 1000.0)
    value = header_value(headers, "retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return _clamp(seconds)
    return _http_date_delay(value, now=now)


# When a rate-limit window or a quota resets, as providers name it beside the 429.
_RESET_DURATIONS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")  # OpenAI, Groq
_RESET_TIMES = tuple(  # Anthropic: RFC 3339 timestamps
    f"anthropic-ratelimit-{what}-reset"
    for what in ("requests", "tokens", "input-tokens", "output-tokens")
)


def parse_reset(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds until every limit the headers name has reset (the longest of them), or None.

    For a quota or billing failure with no Retry-After: the provider's own word on when
    it will take us back, rather than a guess. OpenAI and Groq send Go durations
    (`x-ratelimit-reset-tokens: 6m0s`), Anthropic RFC 3339 times.
    """
    waits: list[float] = []
    for name in _RESET_DURATIONS:
        value = header_value(headers, name)
        seconds = None if value is None else parse_duration(value)
        if seconds is not None:
            waits.append(seconds)
    for name in _RESET_TIMES:
        value = header_value(headers, name)
        at = None if value is None else parse_time(value)
        if at is not None:
            seconds = _clamp(max(0.0, at - now))
            if seconds is not None:
                waits.append(seconds)
    return max(waits) if waits else None


def parse_time(text: str) -> float | None:
    """An RFC 3339 time with its offset (Anthropic's `-reset` headers) in epoch seconds, or
    None (garbage, or no offset: a time in no zone names no instant)."""
    from datetime import datetime

    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return at.timestamp() if at.tzinfo is not None else None


def until_midnight_pacific(now: float) -> float | None:
    """Seconds from `now` to the next midnight in California: when Gemini's per-day
    quotas reset."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    try:
        pacific = ZoneInfo("America/Los_Angeles")
    except LookupError:  # no time zone database on this machine: the reset is unknown
        return None
    here = datetime.fromtimestamp(now, pacific)
    midnight = datetime.combine(here.date() + timedelta(days=1), datetime.min.time(), pacific)
    return max(0.0, midnight.timestamp() - now)


def parse_body_delay(error: object) -> float | None:
    """The wait named inside an error body, in seconds, or None.

    `error` may be the whole parsed body, the unwrapped `error` object, a list (Gemini's
    one-element list) or just the message text. A structured `RetryInfo.retryDelay` wins
    over a delay written in the message.
    """
    for node in _error_nodes(error):
        delay = _retry_info_delay(node.get("details"))
        if delay is not None:
            return delay
    for text in _messages(error):
        delay = message_delay(text)
        if delay is not None:
            return delay
    return None


def message_delay(text: str) -> float | None:
    """The first "try again in X" / "retry after X seconds" delay in a message, or None."""
    match = _MESSAGE_DELAY.search(text)
    if match is None:
        return None
    if match["go"] is not None:
        return parse_duration(match["go"])
    return _clamp(float(match["num"]) * _WORD_UNIT_SECONDS[match["word"].lower()])


def parse_duration(text: str) -> float | None:
    """A Go or protobuf duration ("26s", "644ms", "9m38.016s", "1h2m") in seconds, or None.

    Also the form of OpenAI's and Groq's `x-ratelimit-reset-*` headers.
    """
    text = text.strip()
    total = 0.0
    end = 0
    for part in _DURATION_PART.finditer(text):
        if part.start() != end:
            return None
        total += float(part[1]) * _UNIT_SECONDS[part[2]]
        end = part.end()
    if end == 0 or end != len(text):
        return None
    return _clamp(total)


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """A header by lower-case `name`, from httpx.Headers or a plain dict of any case."""
    # httpx.Headers looks names up case-insensitively; a plain dict does not, so fall back
    # to a scan (responses carry a few dozen headers at most).
    value = headers.get(name)
    if value is not None:
        return value
    for key, candidate in headers.items():
        if key.lower() == name:
            return candidate
    return None


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    if not math.isfinite(number) or number < 0:
        return None
    return number


def _http_date_delay(value: str, *, now: float) -> float | None:
    try:
        parsed = parsedate_tz(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    # HTTP-dates are always GMT; a missing or "-0000" zone means UTC, never local time.
    offset = parsed[9] or 0
    try:
        when = calendar.timegm((*parsed[:6], 0, 0, 0)) - offset
    except (OverflowError, ValueError):
        return None
    return _clamp(max(0.0, when - now))


def _retry_info_delay(details: object) -> float | None:
    if not isinstance(details, list):
        return None
    for entry in details:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("@type")
        delay = entry.get("retryDelay")
        if isinstance(kind, str) and kind.endswith(RETRY_INFO_TYPE_SUFFIX):
            if isinstance(delay, str):
                return parse_duration(delay)
            # The JSON mapping of a protobuf Duration is a string, but a decoded one
            # ({"seconds": 26, "nanos": 0}) turns up in some proxies' re-serialisations.
            if isinstance(delay, dict):
                seconds = _as_float(delay.get("seconds", 0))
                nanos = _as_float(delay.get("nanos", 0))
                if seconds is not None and nanos is not None:
                    return _clamp(seconds + nanos / 1e9)
    return None


def _error_nodes(error: object) -> Iterator[dict[str, object]]:
    """The dicts that may carry `details`: the body, its `error`, a list's elements."""
    if isinstance(error, list):
        for item in error[:4]:
            yield from _error_nodes(item)
    elif isinstance(error, dict):
        yield error
        inner = error.get("error")
        if isinstance(inner, dict | list):
            yield from _error_nodes(inner)


def _messages(error: object) -> Iterator[str]:
    if isinstance(error, str):
        yield error
        return
    for node in _error_nodes(error):
        message = node.get("message")
        if isinstance(message, str):
            yield message


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _clamp(seconds: float) -> float | None:
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)
