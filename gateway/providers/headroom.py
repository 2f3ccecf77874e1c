"""What a response's rate-limit headers say is left of the key's limits, read into a
`gateway.model.Headroom` as the provider stated it. Each provider's dialect is one
function; an adapter names its own (`HttpProvider._headroom`), and what the numbers mean
for the next call is the engine's.

    OpenAI     x-ratelimit-{limit,remaining,reset}-{requests,tokens}: a limit a minute, what
               is left, and a Go duration ("6m0s", "1s", "120ms") until it is whole again
    Azure      the same names; its responses carry the remaining counts (a -1 means
               "not counted", as some of its APIs send)
    Anthropic  anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
               {limit,remaining,reset}: the reset an RFC 3339 time
    Gemini     no rate-limit headers at all (a 429's body names its RetryInfo delay, which
               the classifier reads): no dialect

OpenAI documents the first family in its rate-limits guide
(https://platform.openai.com/docs/guides/rate-limits), Anthropic the second in its API's
rate-limits page (https://docs.anthropic.com/en/api/rate-limits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gateway.model import Headroom, Window

Headers = Mapping[str, str]
RateHeaders = Callable[[Headers, float], Headroom | None]


def _count(value: str | None) -> int | None:
    """A header's count; None for none, garbage or a negative ("not counted")."""
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if number >= 0 else None


def _window(limit: int | None, remaining: int | None, reset_s: float | None) -> Window | None:
    if remaining is None:
        return None
    return Window(limit if limit else None, remaining, reset_s)


def x_ratelimit(headers: Headers, now: float) -> Headroom | None:
    """OpenAI's headers (and Azure's, which carry the remaining counts)."""
    windows: list[Window | None] = []
    for what in ("requests", "tokens"):
        remaining = _count(headers.get(f"x-ratelimit-remaining-{what}"))
        if remaining is None:  # no window without its remaining count: nothing else read
            windows.append(None)
            continue
        reset = headers.get(f"x-ratelimit-reset-{what}")
        reset_s = None
        if reset is not None:
            from gateway.classify.retry_after import parse_duration

            reset_s = parse_duration(reset)
        windows.append(
            _window(_count(headers.get(f"x-ratelimit-limit-{what}")), remaining, reset_s)
        )
    requests, tokens = windows
    return None if requests is None and tokens is None else Headroom(requests, tokens)


def _anthropic_window(headers: Headers, what: str, now: float) -> Window | None:
    remaining = _count(headers.get(f"anthropic-ratelimit-{what}-remaining"))
    if remaining is None:
        return None
    reset = headers.get(f"anthropic-ratelimit-{what}-reset")
    reset_s = None
    if reset is not None:
        from gateway.classify.retry_after import parse_time

        at = parse_time(reset)
        reset_s = None if at is None else max(0.0, at - now)
    return _window(_count(headers.get(f"anthropic-ratelimit-{what}-limit")), remaining, reset_s)


def _left(window: Window) -> float:
    """The share of a window still left (a window of unknown size: what is left, as is)."""
    return window.remaining / window.limit if window.limit else float(window.remaining)


def anthropic(headers: Headers, now: float) -> Headroom | None:
    """Anthropic's headers. Of its token windows (all tokens, input, output) the one with
    the smallest share left stands for them all: the engine keeps one tokens allowance."""
    requests = _anthropic_window(headers, "requests", now)
    found = [
        w
        for w in (
            _anthropic_window(headers, what, now)
            for what in ("tokens", "input-tokens", "output-tokens")
        )
        if w is not None
    ]
    tokens = min(found, key=_left) if found else None
    return None if requests is None and tokens is None else Headroom(requests, tokens)
