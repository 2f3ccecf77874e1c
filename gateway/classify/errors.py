"""The one error classifier: HTTP status + headers + error body, or a transport exception,
become a `Failure` (a kind, and the decision the engine's table gives that kind unless the
server said otherwise: `gateway.engine.table`).

The body is read across its providers' shapes (OpenAI, Azure, Anthropic, Gemini, vLLM,
Ollama, OpenRouter's upstream, a proxy's HTML page) into the values a rule can match; the
rules themselves, in precedence order, are `gateway.classify.rules`, and the cases in
tests/gateway/classify/test_errors.py are bodies providers really send.

A question that goes well classifies nothing and never imports this module; one that fails
classifies a reply or two. Importing it compiles no regex and loads no httpx.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from gateway.classify.rules import (
    STATUS_KINDS,
    Field,
    Rule,
    body_rules,
    connect_causes,
    exception_kinds,
    hint_rules,
)
from gateway.engine.table import TABLE
from gateway.model import Decision, ErrorKind, Failure
from gateway.record import record
from gateway.secrets.shapes import redact_text
from gateway.units import seconds

# ---------------------------------------------------------------------- reading the body


@record
class _Signals:
    """What one error body says, flattened across its shapes (and OpenRouter's upstream)."""

    values: Mapping[Field, tuple[str, ...]]
    message: str  # the most specific human message, for the detail
    label: str  # a short machine name for the detail: code, type or canonical status
    embedded_status: int | None  # an HTTP-like code inside the body
    error: object  # the unwrapped error object, for body delays

    @staticmethod
    def empty(message: str = "") -> _Signals:
        values = {Field.MESSAGE: (message,)} if message else {}
        return _Signals(values, message, "", None, None)


def _decode(body: object) -> tuple[object, str]:
    """(parsed JSON or None, the text) from bytes, str or an already-parsed body."""
    if isinstance(body, bytes | bytearray | memoryview):
        text = bytes(body).decode("utf-8", errors="replace")
    elif isinstance(body, str):
        text = body
    else:
        return body, ""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None, stripped
    try:
        return json.loads(stripped), stripped
    except ValueError:  # includes JSONDecodeError and oversized-int errors
        return None, stripped


def _unwrap(parsed: object) -> dict[str, object] | None:
    """The error object inside any of the providers' body shapes
    (docs/across-providers.md#error-body-shapes)."""
    if isinstance(parsed, list):
        # Gemini (and its OpenAI-compat endpoint) can send [{"error": {...}}].
        parsed = parsed[0] if parsed else None
    if not isinstance(parsed, dict):
        return None
    node: dict[str, object] = parsed
    for _ in range(3):  # "error" inside "error" (old vLLM streams), at most a few deep
        inner = node.get("error")
        if isinstance(inner, dict):
            node = inner
        elif isinstance(inner, str) and inner:
            # Ollama native {"error": "model 'x' not found"}
            return {**node, "message": inner, "error": None}
        else:
            break
    if node is parsed:
        # OpenRouter 200 with choices[0].error; OpenAI Responses `response.failed`.
        choices = parsed.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            choice_error = choices[0].get("error")
            if isinstance(choice_error, dict):
                return choice_error
        response = parsed.get("response")
        if isinstance(response, dict):
            failed = response.get("error")
            if isinstance(failed, dict):
                return failed
    return node


def _text_of(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | dict):
        # FastAPI 422 "detail": [{"msg": ...}] and the like: short, readable enough.
        return json.dumps(value, ensure_ascii=False)[:300]
    return ""


def _status_like(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    return None


def _signals_of(error: dict[str, object], depth: int = 0) -> _Signals:
    values: dict[Field, list[str]] = {f: [] for f in Field}

    def add(field: Field, value: object) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            value = str(value)
        if isinstance(value, str) and value:
            values[field].append(value)

    error_type = error.get("type")
    add(Field.TYPE, error_type)
    add(Field.CODE, error.get("code"))
    status = error.get("status")
    if isinstance(status, str) and not status.isdigit():
        add(Field.STATUS, status)
    message = _text_of(error.get("message")) or _text_of(error.get("detail"))
    add(Field.MESSAGE, message)

    inner = error.get("innererror")
    if isinstance(inner, dict):
        add(Field.REASON, inner.get("code"))
    details = error.get("details")
    if isinstance(details, dict):
        add(Field.REASON, details.get("error_code"))  # Anthropic
    elif isinstance(details, list):
        for entry in details:
            if not isinstance(entry, dict):
                continue
            add(Field.REASON, entry.get("reason"))  # google.rpc.ErrorInfo
            violations = entry.get("violations")
            if isinstance(violations, list):
                for violation in violations:
                    if isinstance(violation, dict):
                        add(Field.QUOTA_ID, violation.get("quotaId"))

    upstream: _Signals | None = None
    metadata = error.get("metadata")
    if isinstance(metadata, dict):
        if metadata.get("reasons") or metadata.get("flagged_input"):
            add(Field.MODERATION, "flagged")
        add(Field.TYPE, metadata.get("error_type"))
        raw = metadata.get("raw")
        if depth == 0 and raw is not None:
            raw_parsed, raw_text = _decode(raw)
            raw_error = _unwrap(raw_parsed)
            if raw_error is not None:
                upstream = _signals_of(raw_error, depth + 1)
            elif raw_text:
                upstream = _Signals.empty(raw_text)

    embedded = (
        _status_like(error.get("code"))
        or _status_like(error.get("raw_status_code"))  # Mistral
        or _status_like(status)  # Azure repeats "status": 400
    )
    label = next(
        (
            v
            for v in (*values[Field.CODE], *values[Field.TYPE], *values[Field.STATUS])
            if not v.isdigit() and v.lower() != "error"
        ),
        "",
    )
    if upstream is not None:
        for field, found in upstream.values.items():
            values[field].extend(found)
        # "Provider returned error" says less than what the provider returned.
        if upstream.message:
            message = f"{message}: {upstream.message}" if message else upstream.message
        label = label or upstream.label
        embedded = embedded or upstream.embedded_status
    return _Signals(
        values={f: tuple(v) for f, v in values.items() if v},
        message=message,
        label=label,
        embedded_status=embedded,
        error=error if upstream is None else [error, upstream.error],
    )


_HTML_TITLE = r"<title[^>]*>(.*?)</title>"


def _read_body(body: object) -> _Signals:
    parsed, text = _decode(body)
    error = _unwrap(parsed)
    if error is not None:
        return _signals_of(error)
    if parsed is not None and not isinstance(parsed, dict | list):
        text = str(parsed)
    if text.startswith("<") or "<html" in text[:500].lower():
        # A proxy's or CDN's HTML page: its title is the only readable part.
        title = re.search(_HTML_TITLE, text, re.IGNORECASE | re.DOTALL)  # re caches it
        name = " ".join(title.group(1).split()) if title else ""
        return _Signals(
            {},
            f"HTML page from a proxy: {name}" if name else "HTML page from a proxy",
            "",
            None,
            None,
        )
    return _Signals.empty(text)


def _match(rules: Iterable[Rule], signals: _Signals) -> ErrorKind | None:
    for rule in rules:
        if any(rule.pattern.search(v) for v in signals.values.get(rule.field, ())):
            return rule.kind
    return None


def _kind_for(signals: _Signals, status: int | None) -> tuple[ErrorKind, bool]:
    """The kind, and whether the body itself proved it (a diagnosis, not a status guess)."""
    kind = _match(body_rules(), signals)
    if kind is not None:
        return kind, True
    if status is not None and status in STATUS_KINDS:
        return STATUS_KINDS[status], False
    kind = _match(hint_rules(), signals)
    if kind is not None:
        return kind, False
    if status is not None and 500 <= status <= 599:
        return ErrorKind.SERVER, False
    if status is not None and 400 <= status <= 499:
        return ErrorKind.BAD_REQUEST, False
    return ErrorKind.UNKNOWN, False


# --------------------------------------------------------------------- the public entries


def classify_response(
    status: int, headers: Mapping[str, str], body: bytes | str | object, *, now: float
) -> Failure:
    """Classify an HTTP error response (or a 200 whose body is an error, as OpenRouter sends).

    `body` may be raw bytes/str (JSON or not) or already-parsed JSON. `now` is epoch seconds,
    for a Retry-After given as an HTTP-date.
    """
    from gateway.classify.retry_after import header_value, parse_retry_after

    signals = _read_body(body)
    effective = status if status >= 400 else signals.embedded_status
    kind, proven = _kind_for(signals, effective)
    decision = TABLE[kind].decision

    should_retry = (header_value(headers, "x-should-retry") or "").strip().lower()
    if should_retry == "true" and not proven:
        # The server vouches that this attempt may succeed on retry; the Stainless SDKs
        # honour that before any status rule, and so do we. But not over the body's own
        # diagnosis (a refusal, an exhausted quota, an oversized input, a bad key): those
        # meet the same verdict however often they are sent.
        decision = Decision.RETRY
    elif should_retry == "false" and decision is Decision.RETRY:
        # The server forbids retrying a transient failure: move on now
        # (docs/across-providers.md#x-should-retry).
        decision = Decision.FAIL_OVER

    retry_after = parse_retry_after(headers, now=now)
    if retry_after is None:
        retry_after = _body_delay(signals)
    if retry_after is None and kind is ErrorKind.QUOTA:
        retry_after = _quota_reset(headers, signals, now)
    return Failure(
        kind=kind,
        decision=decision,
        detail=_detail(status, signals, retry_after),
        status=status,
        retry_after=retry_after,
        code=_code(signals.label),
    )


def _quota_reset(headers: Mapping[str, str], signals: _Signals, now: float) -> float | None:
    """When an exhausted quota comes back, if the provider said: its reset headers, or a
    Gemini per-day quota (those reset at midnight Pacific). None: it did not say."""
    from gateway.classify.retry_after import parse_reset, until_midnight_pacific

    reset = parse_reset(headers, now=now)
    if reset is None and any("PerDay" in q for q in signals.values.get(Field.QUOTA_ID, ())):
        reset = until_midnight_pacific(now)
    return reset


def _code(label: str) -> str | None:
    """The body's machine name for the error, if it is one: a short identifier only, so no
    free text a provider put there (which could echo the question) is ever kept."""
    return label if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]{0,63}", label) else None


def _body_delay(signals: _Signals) -> float | None:
    from gateway.classify.retry_after import message_delay, parse_body_delay

    delay = parse_body_delay(signals.error) if signals.error is not None else None
    if delay is None and signals.message:
        delay = message_delay(signals.message)
    return delay


def classify_stream_error(payload: object, *, now: float) -> Failure:
    """Classify an error event that arrived inside a 200 stream.

    `payload` is the event's JSON (parsed, or its raw text): Anthropic
    {"type":"error","error":{...}}, OpenAI {"error":{...}}, Gemini {"error":{"code":503,...}},
    an OpenRouter chunk with `error` and finish_reason "error". The stream's 200 says nothing,
    so only the body decides; `status` is the code embedded in the body, if any. `now` is
    accepted for symmetry with `classify_response` (stream events carry no dates today).
    """
    del now
    signals = _read_body(payload)
    status = signals.embedded_status
    kind, _ = _kind_for(signals, status)
    retry_after = _body_delay(signals)
    return Failure(
        kind=kind,
        decision=TABLE[kind].decision,
        detail=_detail(status, signals, retry_after),
        status=status,
        retry_after=retry_after,
    )


# ----------------------------------------------------------------- transport exceptions


def classify_exception(exc: BaseException) -> Failure:
    """Classify a transport exception (httpx, socket, ssl). Never raises."""
    text = _exception_text(exc)
    for exc_type, kind, label in exception_kinds():
        if isinstance(exc, exc_type):
            if kind is ErrorKind.NETWORK:
                label = next((name for p, name in connect_causes() if p.search(text)), label)
            return _transport_failure(kind, label, text)
    return _transport_failure(ErrorKind.UNKNOWN, f"unexpected {type(exc).__name__}", text)


def _exception_text(exc: BaseException) -> str:
    """The exception's message and its causes', which is where the OS error text lives."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < 4:
        seen.add(id(current))
        try:
            message = str(current).strip()
        except Exception:  # a broken __str__ must not turn a failure into a crash
            message = ""
        if message and message not in parts:
            parts.append(message)
        current = current.__cause__ or current.__context__
    return "; ".join(parts)


def _transport_failure(kind: ErrorKind, label: str, text: str) -> Failure:
    cleaned = _shorten(redact_text(text))
    detail = f"{label}: {cleaned}" if cleaned and cleaned.lower() != label.lower() else label
    return Failure(kind=kind, decision=TABLE[kind].decision, detail=detail)


# ------------------------------------------------------------------------------ details

DETAIL_MESSAGE_LIMIT = 200
# Providers echo keys back (OpenAI: "Incorrect API key provided: sk-abc***xyz"); even a
# masked key is a fingerprint of a secret, so every detail passes `redact_text` first.


def _shorten(text: str, limit: int = DETAIL_MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _detail(status: int | None, signals: _Signals, retry_after: float | None) -> str:
    """ "429 rate_limit_exceeded: Rate limit reached ... (retry after 0.6 s)"."""
    head = " ".join(p for p in (str(status) if status else "", redact_text(signals.label)) if p)
    message = _shorten(redact_text(signals.message))
    if message:
        detail = f"{head}: {message}" if head else message
    else:
        missing = "empty body" if signals.error is None else "no error message"
        detail = f"{head} ({missing})" if head else missing
    if retry_after is not None:
        detail += f" (retry after {seconds(retry_after)} s)"
    return detail


__all__ = [
    "DETAIL_MESSAGE_LIMIT",
    "classify_exception",
    "classify_response",
    "classify_stream_error",
]
