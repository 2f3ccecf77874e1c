"""What an error reply proves, as data the classifier reads top to bottom (first match wins).

- `body_rules()`: what the body's type/code/status/reason fields or message text prove,
  whatever the HTTP status (refusal, quota, context window, auth, model not found);
- `STATUS_KINDS`: what the HTTP status (or an error code embedded in a 200 stream) means
  when the body proved nothing stronger;
- `hint_rules()`: weaker body hints, used only when the status says nothing (a 200 stream,
  an unlisted status);
- `exception_kinds()` / `connect_causes()`: transport exceptions, and what a failed
  connect's message says about which step failed.

The tables that hold regexes or name httpx's exceptions are built by cached functions on
first use: importing this module compiles no regex and loads no httpx. What each kind then
means to the engine is `gateway.engine.table`'s.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

from gateway.model import ErrorKind
from gateway.record import record


class Field(Enum):
    """Which part of an error body a rule reads."""

    TYPE = "type"  # error.type (OpenAI, Anthropic, vLLM); OpenRouter metadata.error_type
    CODE = "code"  # error.code as text (OpenAI/Azure/Mistral strings, OpenRouter ints)
    STATUS = "status"  # google.rpc canonical status (Gemini): RESOURCE_EXHAUSTED, ...
    REASON = "reason"  # ErrorInfo.reason, Anthropic details.error_code, Azure innererror.code
    QUOTA_ID = "quota_id"  # Gemini QuotaFailure.violations[].quotaId
    MESSAGE = "message"  # the human message (or a plain-text body)
    MODERATION = "moderation"  # "flagged" when OpenRouter metadata carries moderation fields


@record
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
def body_rules() -> tuple[Rule, ...]:
    # Order is precedence: the first rule that matches decides. Rough order, after
    # docs/providers.md#the-order-of-the-rules: refusal, hard quota/billing, context window,
    # per-day quotas, auth/region, model not found.
    return (
        # -- refusal / safety: FATAL, whatever the status (docs/across-providers.md#refusals).
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
        # -- billing / quota that no wait within a question fixes.
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
        # -- context window or request size: fail over, never cool down
        # (docs/across-providers.md#context-overflow).
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
        # -- quotas measured per day (or set to zero): waiting out a minute does not help
        # (docs/across-providers.md#the-status-is-not-enough).
        Rule(_K.QUOTA, _F.QUOTA_ID, _text(r"PerDay")),  # Gemini QuotaFailure
        *_rules(
            _K.QUOTA,
            _F.MESSAGE,
            # Gemini "Quota exceeded for metric ..., limit: 0" (also "limit: 0." ending a
            # sentence), but not a limit of 0.5 or 05.
            _text(r"\blimit: 0(?!\d|\.\d)"),
            _text(r"\bper day\b"),  # Groq/OpenAI "on tokens per day (TPD)", "requests per day"
        ),
        # -- credentials, permission, region (docs/across-providers.md#bad-credentials).
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
        # -- the model or deployment does not exist here.
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
STATUS_KINDS: Mapping[int, ErrorKind] = MappingProxyType(
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
def hint_rules() -> tuple[Rule, ...]:
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


# ----------------------------------------------------------------- transport exceptions


@functools.cache
def exception_kinds() -> tuple[tuple[type[BaseException], ErrorKind, str], ...]:
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
        (httpx.ConnectError, _K.NETWORK, "connection failed"),  # refined by connect_causes
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
        # An undecodable chunk or body is the server's fault, a failure and not an answer
        # (docs/decisions.md#streams): retryable like any server error.
        (json.JSONDecodeError, _K.SERVER, "malformed response from the server"),
    )


@functools.cache
def connect_causes() -> tuple[tuple[re.Pattern[str], str], ...]:
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
