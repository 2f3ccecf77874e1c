"""The one error classifier: HTTP status + headers + error body, or a transport exception,
become a `Failure` (a kind, and the decision the engine's table gives that kind unless the
server said otherwise: `gateway.engine.table`).

Everything that decides the kind is data, read top to bottom in precedence order:

- `_body_rules()`: what the body's type/code/status/reason fields or message text prove,
  whatever the HTTP status (refusal, quota, context window, auth, model not found);
- `_STATUS_KINDS`: what the HTTP status (or an error code embedded in a 200 stream) means
  when the body proved nothing stronger;
- `_hint_rules()`: weaker body hints, used only when the status says nothing (a 200 stream,
  an unlisted status);
- `_exception_kinds()` / `_connect_causes()`: transport exceptions.

A question that goes well classifies nothing and never imports this module; one that fails
classifies a reply or two. So the tables that hold regexes or name httpx's exceptions are
built by cached functions on first use: importing the module compiles no regex and loads no
httpx.

Sources for every rule are in /work/shared/provider-reference.md (sections 1 and 7) and the
cases in tests/gateway/classify/test_errors.py.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from gateway.engine.table import TABLE
from gateway.model import Decision, ErrorKind, Failure
from gateway.secrets.shapes import redact_text

# ------------------------------------------------------------------------------ the rules


class Field(Enum):
    """Which part of an error body a rule reads."""

    TYPE = "type"  # error.type (OpenAI, Anthropic, vLLM); OpenRouter metadata.error_type
    CODE = "code"  # error.code as text (OpenAI/Azure/Mistral strings, OpenRouter ints)
    STATUS = "status"  # google.rpc canonical status (Gemini): RESOURCE_EXHAUSTED, ...
    REASON = "reason"  # ErrorInfo.reason, Anthropic details.error_code, Azure innererror.code
    QUOTA_ID = "quota_id"  # Gemini QuotaFailure.violations[].quotaId
    MESSAGE = "message"  # the human message (or a plain-text body)
    MODERATION = "moderation"  # "flagged" when OpenRouter metadata carries moderation fields


@dataclass(frozen=True)
class Rule:
    """`kind` when any value of `field` in the error body matches `pattern`."""

    kind: ErrorKind
    field: Field
    pattern: re.Pattern[str]


def _one_of(*values: str) -> re.Pattern[str]:
    return re.compile("^(?:" + "|".join(re.escape(v) for v in values) + ")$", re.IGNORECASE)


def _text(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _rules(kind: ErrorKind, field: Field, *patterns: re.Pattern[str]) -> tuple[Rule, ...]:
    return tuple(Rule(kind, field, p) for p in patterns)


_K = ErrorKind
_F = Field


@functools.cache
def _body_rules() -> tuple[Rule, ...]:
    # Order is precedence: the first rule that matches decides. Rough order, after
    # reference §7: refusal, hard quota/billing, context window, per-day quotas,
    # auth/region, model not found.
    return (
        # -- refusal / safety (§1.4, §7.4): FATAL, whatever the status.
        Rule(
            _K.REFUSAL,
            _F.CODE,
            _one_of(
                "invalid_prompt",  # OpenAI 400 "Invalid prompt: your prompt was flagged"
                "bio_policy",  # OpenAI Responses error codes
                "image_content_policy_violation",
                "content_policy_violation",
                "content_filter",  # Azure 400
            ),
        ),
        Rule(_K.REFUSAL, _F.REASON, _one_of("ResponsibleAIPolicyViolation")),  # Azure innererror
        Rule(_K.REFUSAL, _F.MODERATION, _one_of("flagged")),  # OpenRouter 403 moderation metadata
        *_rules(
            _K.REFUSAL,
            _F.MESSAGE,
            # The same verdicts when a proxy (LiteLLM, a gateway) kept only the message.
            _text(r"triggering Azure OpenAI's content management policy"),
            _text(r"flagged as potentially violating our usage polic"),
        ),
        # -- billing / quota that no wait within a question fixes (§7.5).
        Rule(_K.QUOTA, _F.TYPE, _one_of("insufficient_quota", "billing_error")),
        Rule(
            _K.QUOTA,
            _F.CODE,
            _one_of(
                "insufficient_quota",
                "credit_balance_exhausted",
                "organization_spend_limit_exceeded",
                "project_spend_limit_exceeded",
                "organization_usage_limit_exceeded",
            ),
        ),
        Rule(_K.QUOTA, _F.REASON, _one_of("enforced_spend_limit_reached")),
        *_rules(
            _K.QUOTA,
            _F.MESSAGE,
            _text(r"credit balance is too low"),  # Anthropic 400 (anthropics/claude-code#867)
            _text(r"reached your specified (?:workspace )?API usage limits"),  # Anthropic 400
            _text(r"\binsufficient (?:credits|balance|funds)\b"),  # OpenRouter/DeepSeek 402
            _text(r"\bspend(?:ing)? limit\b"),
        ),
        # -- context window or request size (§1.3, §7.6): fail over, never cool down.
        Rule(_K.CONTEXT_WINDOW, _F.CODE, _one_of("context_length_exceeded", "request_too_large")),
        Rule(_K.CONTEXT_WINDOW, _F.TYPE, _one_of("request_too_large")),  # Anthropic 413
        *_rules(
            _K.CONTEXT_WINDOW,
            _F.MESSAGE,
            _text(r"context_length_exceeded"),
            _text(r"maximum context length"),  # vLLM, legacy OpenAI
            _text(r"prompt is too long"),  # Anthropic
            _text(r"input token count .* exceeds the maximum"),  # Gemini
            _text(r"input context is too long"),  # Gemini troubleshooting: 500 INTERNAL
            _text(r"exceeds? the (?:model'?s )?context window"),
            _text(r"exceed context limit"),  # Anthropic "input length and max_tokens exceed..."
            _text(r"max_new_tokens\W*must be <="),  # Together / TGI
            # OpenAI 429 / Groq 413 "Request too large for <model> ... on tokens per min":
            # this one request exceeds the deployment's whole per-minute allowance, so no wait
            # ever lets it through here. It is the input's size, not the deployment's health:
            # fail over (maybe to a bigger-limit deployment) and do not cool this one down.
            _text(r"request too large for\b"),
        ),
        # -- quotas measured per day (or set to zero): waiting out a minute does not help (§1.1).
        Rule(_K.QUOTA, _F.QUOTA_ID, _text(r"PerDay")),  # Gemini QuotaFailure
        *_rules(
            _K.QUOTA,
            _F.MESSAGE,
            # Gemini "Quota exceeded for metric ..., limit: 0" (also "limit: 0." ending a
            # sentence), but not a limit of 0.5 or 05.
            _text(r"\blimit: 0(?!\d|\.\d)"),
            _text(r"\bper day\b"),  # Groq/OpenAI "on tokens per day (TPD)", "requests per day"
        ),
        # -- credentials, permission, region (§1.2, §7.7).
        Rule(_K.AUTH, _F.REASON, _one_of("API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED")),
        Rule(
            _K.AUTH,
            _F.CODE,
            _one_of("invalid_api_key", "unsupported_country_region_territory", "invalid_auth"),
        ),
        Rule(
            _K.AUTH,
            _F.TYPE,
            _one_of("authentication_error", "permission_error", "request_forbidden"),
        ),
        Rule(
            _K.AUTH,
            _F.STATUS,
            _one_of("UNAUTHENTICATED", "PERMISSION_DENIED", "FAILED_PRECONDITION"),
        ),
        *_rules(
            _K.AUTH,
            _F.MESSAGE,
            _text(r"\bapi key (?:not valid|expired|is invalid)"),  # Gemini
            _text(r"\bincorrect api key\b"),  # OpenAI
            _text(r"\binvalid (?:x-)?api[ _-]?key\b"),  # Anthropic "invalid x-api-key"
            _text(r"user location is not supported"),  # Gemini region block
        ),
        # -- the model or deployment does not exist here (§7.7).
        Rule(
            _K.MODEL_NOT_FOUND,
            _F.CODE,
            _one_of("model_not_found", "DeploymentNotFound", "invalid_model"),
        ),
        Rule(
            _K.MODEL_NOT_FOUND,
            _F.TYPE,
            _one_of("not_found_error", "NotFoundError", "invalid_model"),
        ),
        Rule(_K.MODEL_NOT_FOUND, _F.STATUS, _one_of("NOT_FOUND")),
        *_rules(
            _K.MODEL_NOT_FOUND,
            _F.MESSAGE,
            _text(r"\bmodels?\b[^\n]*?\b(?:is not found|not found|does not exist)\b"),
            _text(r"\binvalid model\b"),  # Mistral 400 "Invalid model: ..."
        ),
    )


# What the HTTP status says, when the body proved nothing above. For a 200 stream the
# error's embedded code (Gemini 503, OpenRouter 502, vLLM 400) is read the same way.
_STATUS_KINDS: Mapping[int, ErrorKind] = MappingProxyType(
    {
        400: _K.BAD_REQUEST,
        401: _K.AUTH,
        402: _K.QUOTA,
        403: _K.AUTH,
        404: _K.MODEL_NOT_FOUND,
        405: _K.BAD_REQUEST,
        407: _K.AUTH,  # a proxy wants credentials
        408: _K.TIMEOUT,
        # 409 (OpenAI "lock timeout", Anthropic conflict_error) and 425 (too early) are the
        # server's state, not our rate: retryable, labelled server.
        409: _K.SERVER,
        410: _K.MODEL_NOT_FOUND,  # a retired model
        413: _K.CONTEXT_WINDOW,
        415: _K.BAD_REQUEST,
        422: _K.BAD_REQUEST,
        425: _K.SERVER,
        429: _K.RATE_LIMIT,
        498: _K.OVERLOADED,  # Groq flex tier capacity_exceeded
        # 499: the request was cancelled (Gemini CANCELLED, Ollama, Groq). When our own
        # deadline did it we never see a response; from the server it is unexplained.
        499: _K.UNKNOWN,
        500: _K.SERVER,
        502: _K.SERVER,
        503: _K.OVERLOADED,
        504: _K.SERVER,
        520: _K.SERVER,  # Cloudflare 520-524: origin errors, unreachable, timeouts
        521: _K.SERVER,
        522: _K.SERVER,
        523: _K.SERVER,
        524: _K.SERVER,
        529: _K.OVERLOADED,  # Anthropic overloaded_error
    }
)


@functools.cache
def _hint_rules() -> tuple[Rule, ...]:
    # Weaker hints: the error's own type/code/status names. They speak only when the status
    # does not (a 200 stream, an odd status), because e.g. Ollama labels a 503 "api_error".
    return (
        Rule(_K.OVERLOADED, _F.TYPE, _one_of("overloaded_error")),
        Rule(_K.OVERLOADED, _F.CODE, _one_of("server_is_overloaded", "capacity_exceeded")),
        Rule(_K.OVERLOADED, _F.STATUS, _one_of("UNAVAILABLE")),
        Rule(
            _K.RATE_LIMIT,
            _F.TYPE,
            _one_of("rate_limit_error", "tokens", "requests", "rate_limited"),
        ),
        Rule(_K.RATE_LIMIT, _F.CODE, _one_of("rate_limit_exceeded", "slow_down")),
        Rule(_K.RATE_LIMIT, _F.STATUS, _one_of("RESOURCE_EXHAUSTED")),
        Rule(_K.TIMEOUT, _F.TYPE, _one_of("timeout_error")),
        Rule(_K.TIMEOUT, _F.STATUS, _one_of("DEADLINE_EXCEEDED")),
        Rule(
            _K.SERVER,
            _F.TYPE,
            _one_of("api_error", "server_error", "InternalServerError", "provider_unavailable"),
        ),
        Rule(_K.SERVER, _F.CODE, _one_of("server_error")),
        Rule(_K.SERVER, _F.STATUS, _one_of("INTERNAL")),
        Rule(_K.BAD_REQUEST, _F.TYPE, _one_of("invalid_request_error", "BadRequestError")),
        Rule(_K.BAD_REQUEST, _F.STATUS, _one_of("INVALID_ARGUMENT")),
        *_rules(
            _K.OVERLOADED,
            _F.MESSAGE,
            _text(r"\boverloaded\b|\bhigh demand\b|\bserver busy\b|\bat capacity\b"),
        ),
        *_rules(_K.RATE_LIMIT, _F.MESSAGE, _text(r"\brate limit")),
    )


# ---------------------------------------------------------------------- reading the body


@dataclass(frozen=True)
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
    """The error object inside any of the providers' body shapes (reference §1.7, §7.2)."""
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
    kind = _match(_body_rules(), signals)
    if kind is not None:
        return kind, True
    if status is not None and status in _STATUS_KINDS:
        return _STATUS_KINDS[status], False
    kind = _match(_hint_rules(), signals)
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
        # The server forbids retrying a transient failure: move on now (reference §1.8).
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


@functools.cache
def _exception_kinds() -> tuple[tuple[type[BaseException], ErrorKind, str], ...]:
    # Checked in order with isinstance; the first match decides. httpx's own exceptions
    # come first, then the standard library's (a transport may leak them unwrapped).
    import socket
    import ssl

    import httpx

    return (
        (httpx.ConnectTimeout, _K.TIMEOUT, "connect timeout"),
        (httpx.ReadTimeout, _K.TIMEOUT, "read timeout: no data from the server in time"),
        (httpx.WriteTimeout, _K.TIMEOUT, "write timeout"),
        (httpx.PoolTimeout, _K.TIMEOUT, "connection pool timeout"),
        (httpx.TimeoutException, _K.TIMEOUT, "timeout"),
        (httpx.ConnectError, _K.NETWORK, "connection failed"),  # refined by _connect_causes
        (httpx.RemoteProtocolError, _K.NETWORK, "the server closed the connection"),
        (httpx.ReadError, _K.NETWORK, "connection lost while reading"),
        (httpx.WriteError, _K.NETWORK, "connection lost while sending"),
        (httpx.ProxyError, _K.NETWORK, "proxy error"),
        (httpx.NetworkError, _K.NETWORK, "network error"),
        (ssl.SSLError, _K.NETWORK, "TLS error"),
        (socket.gaierror, _K.NETWORK, "DNS lookup failed"),
        (ConnectionRefusedError, _K.NETWORK, "connection refused"),
        (ConnectionResetError, _K.NETWORK, "connection reset"),
        (ConnectionError, _K.NETWORK, "connection failed"),
        (TimeoutError, _K.TIMEOUT, "timeout"),
        # An undecodable chunk or body is the server's fault (design: "a chunk that is not
        # valid JSON is a failure"); retryable like any server error.
        (json.JSONDecodeError, _K.SERVER, "malformed response from the server"),
    )


@functools.cache
def _connect_causes() -> tuple[tuple[re.Pattern[str], str], ...]:
    # A connect error's message (and its causes') says which step failed.
    return (
        (
            _text(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|\bSSL\b|\bTLS\b|handshake"),
            "TLS error",
        ),
        (
            _text(
                r"Name or service not known|nodename nor servname|getaddrinfo failed|"
                r"Temporary failure in name resolution|No address associated|"
                r"Name does not resolve"
            ),
            "DNS lookup failed",
        ),
        (_text(r"Connection refused|Errno 111\b|Errno 61\b|10061"), "connection refused"),
        (_text(r"Network is unreachable|No route to host"), "network unreachable"),
        (_text(r"Connection reset|Errno 104\b|Errno 54\b"), "connection reset"),
    )


def classify_exception(exc: BaseException) -> Failure:
    """Classify a transport exception (httpx, socket, ssl). Never raises."""
    text = _exception_text(exc)
    for exc_type, kind, label in _exception_kinds():
        if isinstance(exc, exc_type):
            if kind is _K.NETWORK:
                label = next((name for p, name in _connect_causes() if p.search(text)), label)
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


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


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
        detail += f" (retry after {_seconds(retry_after)} s)"
    return detail


__all__ = [
    "DETAIL_MESSAGE_LIMIT",
    "Field",
    "Rule",
    "classify_exception",
    "classify_response",
    "classify_stream_error",
]
