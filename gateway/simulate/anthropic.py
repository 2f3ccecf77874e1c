"""Anthropic Messages, as its fake server speaks it (docs/anthropic.md).

Anthropic has no separate "prompt blocked" answer: its safety system refuses, so
`blocked` answers as `refusal` does. Its quota exhaustion arrives as a 400 whose only tell
is the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from gateway.config import Deployment
from gateway.simulate.wire import (
    REFUSAL_TEXT,
    Call,
    Json,
    Stream,
    cut_short,
    json_response,
    last_user,
    load_body,
    missing_field,
    ok,
    reason_phrase,
    sse,
    text_deltas,
    whole_seconds,
)

_REFUSAL: Json = {"type": "refusal", "category": None, "explanation": None}


class AnthropicWire:
    """Anthropic Messages (docs/anthropic.md)."""

    errors: Mapping[int, tuple[str, str]] = {
        400: (
            "invalid_request_error",
            'messages: roles must alternate between "user" and "assistant", but found'
            ' multiple "user" roles in a row',
        ),
        401: ("authentication_error", "invalid x-api-key"),
        402: ("billing_error", "Your account has a billing issue. Please check your plan."),
        403: (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        409: ("conflict_error", "Conflict"),
        413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        429: (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per"
            " minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You"
            " can see the response headers for current usage. Please reduce the prompt length"
            " or the maximum tokens requested, or try again later.",
        ),
        500: ("api_error", "Internal server error"),
        504: ("timeout_error", "Request timeout"),
        529: ("overloaded_error", "Overloaded"),
    }

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        if not request.url.path.endswith("/v1/messages") or request.method != "POST":
            return self._envelope(404, "not_found_error", "Not Found", {})
        body = load_body(request)
        if isinstance(body, str):
            return self._envelope(
                400, "invalid_request_error", f"The request body is not valid JSON: {body}", {}
            )
        field = missing_field(body, ("model", "max_tokens", "messages"))
        if field is not None:
            return self._envelope(400, "invalid_request_error", f"{field}: Field required", {})
        return None

    def question(self, body: Json) -> str:
        return last_user(body.get("messages"))

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return body.get("stream") is True

    def _envelope(
        self, status: int, type_: str, message: str, headers: Mapping[str, str]
    ) -> httpx.Response:
        body = {
            "type": "error",
            "error": {"type": type_, "message": message},
            "request_id": headers.get("request-id", "req_sim"),
        }
        return json_response(status, body, headers)

    def _message(self, call: Call, text: str, stop: str, **extra: Any) -> Json:
        return {
            "id": f"msg_{call.tag}",
            "type": "message",
            "role": "assistant",
            "model": call.model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": None,
            **extra,
            "usage": {
                "input_tokens": call.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": len(text_deltas(text)) if text else 0,
                "service_tier": "standard",
            },
        }

    def answer(self, call: Call, text: str) -> httpx.Response:
        return json_response(200, self._message(call, text, "end_turn"), self.headers(call))

    def limit(self, call: Call, text: str) -> httpx.Response:
        return self._ended(call, cut_short(text), "max_tokens")

    def empty(self, call: Call) -> httpx.Response:
        return self._ended(call, "", "end_turn")

    def _ended(self, call: Call, text: str, stop: str) -> httpx.Response:
        reply: Json | Stream
        if call.stream:
            reply = self._stream(call, text, stop, None)
        else:
            reply = self._message(call, text, stop)
        return ok(call, reply, self.headers(call))

    def refusal(self, call: Call) -> httpx.Response:
        reply: Json | Stream
        if call.stream:
            reply = self._stream(call, REFUSAL_TEXT, "refusal", _REFUSAL)
        else:
            reply = self._message(call, REFUSAL_TEXT, "refusal", stop_details=_REFUSAL)
        return ok(call, reply, self.headers(call))

    # Anthropic has no separate "prompt blocked" answer: its safety system refuses.
    blocked = refusal

    def stream(self, call: Call, text: str) -> Stream:
        return self._stream(call, text, "end_turn", None)

    def _stream(self, call: Call, text: str, stop: str, details: Json | None) -> Stream:
        pieces = text_deltas(text)
        start = self._message(call, "", "end_turn")
        start.update(stop_reason=None)
        start["usage"]["output_tokens"] = 1
        head = [
            sse({"type": "message_start", "message": start}, "message_start"),
            sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            ),
            sse({"type": "ping"}, "ping"),
        ]
        deltas = [
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
                "content_block_delta",
            )
            for piece in pieces
        ]
        delta: Json = {"stop_reason": stop, "stop_sequence": None}
        if details is not None:
            delta["stop_details"] = details
        tail = [
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse(
                {"type": "message_delta", "delta": delta, "usage": {"output_tokens": len(pieces)}},
                "message_delta",
            ),
            sse({"type": "message_stop"}, "message_stop"),
        ]
        return Stream(head, deltas, tail)

    def error(self, call: Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = self.headers(call)
        if retry_after is not None:
            headers["retry-after"] = whole_seconds(retry_after)
        if status == 429:
            reset = datetime.fromtimestamp(call.now + (retry_after or 60), UTC)
            headers.update(
                {
                    "anthropic-ratelimit-requests-limit": "50",
                    "anthropic-ratelimit-requests-remaining": "0",
                    "anthropic-ratelimit-requests-reset": reset.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        if status == 404:
            return self._envelope(404, "not_found_error", f"model: {call.model}", headers)
        fallback = ("invalid_request_error" if status < 500 else "api_error", reason_phrase(status))
        type_, message = self.errors.get(status, fallback)
        return self._envelope(status, type_, message, headers)

    def overflow(self, call: Call) -> httpx.Response:
        window = call.deployment.context_window
        message = f"prompt is too long: {window + call.input_tokens} tokens > {window} maximum"
        return self._envelope(400, "invalid_request_error", message, self.headers(call))

    def quota(self, call: Call) -> httpx.Response:
        # Seen in the wild as a 400, not 402 (docs/across-providers.md#the-status-is-not-enough):
        # only the message tells.
        return self._envelope(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans &"
            " Billing to upgrade or purchase credits.",
            self.headers(call),
        )

    def headers(self, call: Call) -> dict[str, str]:
        return {"request-id": f"req_{call.tag}", "anthropic-organization-id": "sim-org"}
