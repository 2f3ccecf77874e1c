"""OpenAI Chat Completions, as its fake server speaks it (docs/openai.md).

Azure OpenAI shares this shape and builds on it (`gateway.simulate.azure`).
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from gateway.config import Deployment
from gateway.simulate.grammar import format_delay
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


class OpenAIWire:
    """OpenAI Chat Completions (docs/openai.md)."""

    path_end = "/chat/completions"
    required: tuple[str, ...] = ("model", "messages")

    # status -> (type, code, message); anything else gets a generic envelope
    errors: Mapping[int, tuple[str | None, str | None, str]] = {
        400: (
            "invalid_request_error",
            "unsupported_parameter",
            "Unsupported parameter: 'max_tokens' is not supported with this model."
            " Use 'max_completion_tokens' instead.",
        ),
        401: (
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided. You can find your API key at"
            " https://platform.openai.com/account/api-keys.",
        ),
        403: (
            "request_forbidden",
            "unsupported_country_region_territory",
            "Country, region, or territory not supported",
        ),
        429: ("requests", "rate_limit_exceeded", ""),  # message built per model below
        500: (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        503: (
            "service_unavailable_error",
            "server_is_overloaded",
            "The server is overloaded or not ready yet.",
        ),
    }

    # --- requests

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        if not request.url.path.endswith(self.path_end) or request.method != "POST":
            return self._envelope(
                404,
                "invalid_request_error",
                None,
                f"Invalid URL ({request.method} {request.url.path})",
            )
        body = load_body(request)
        if isinstance(body, str):
            return self._envelope(
                400,
                "invalid_request_error",
                None,
                "We could not parse the JSON body of your request. (HINT: This likely means"
                " you aren't using your HTTP library correctly. The OpenAI API expects a JSON"
                " payload, but what was sent was not valid JSON.)",
            )
        field = missing_field(body, self.required)
        if field is not None:
            return self._envelope(
                400,
                "invalid_request_error",
                "missing_required_parameter",
                f"Missing required parameter: '{field}'.",
                param=field,
            )
        return None

    def question(self, body: Json) -> str:
        return last_user(body.get("messages"))

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return body.get("stream") is True

    # --- answers

    def _base(self, call: Call, kind: str) -> Json:
        return {
            "id": f"chatcmpl-{call.tag}",
            "object": kind,
            "created": int(call.now),
            "model": call.model,
            "system_fingerprint": "fp_sim",
        }

    def _usage(self, call: Call, output_tokens: int) -> Json:
        return {
            "prompt_tokens": call.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": call.input_tokens + output_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def _choice(self, message: Json, finish: str) -> Json:
        return {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}

    def _completion(self, call: Call, message: Json, finish: str, tokens: int) -> Json:
        body = self._base(call, "chat.completion")
        body["choices"] = [self._choice(message, finish)]
        body["usage"] = self._usage(call, tokens)
        return body

    def answer(self, call: Call, text: str) -> httpx.Response:
        message: Json = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
        body = self._completion(call, message, "stop", len(text_deltas(text)))
        return json_response(200, body, self.headers(call))

    def limit(self, call: Call, text: str) -> httpx.Response:
        return self._ended(call, cut_short(text), "length")

    def empty(self, call: Call) -> httpx.Response:
        return self._ended(call, "", "stop")

    def _ended(self, call: Call, text: str, finish: str) -> httpx.Response:
        reply: Json | Stream
        if call.stream:
            reply = self._stream(call, text, "content", finish)
        else:
            message: Json = {
                "role": "assistant",
                "content": text,
                "refusal": None,
                "annotations": [],
            }
            reply = self._completion(call, message, finish, len(text_deltas(text)) if text else 0)
        return ok(call, reply, self.headers(call))

    def refusal(self, call: Call) -> httpx.Response:
        # OpenAI's structured refusal: content null, the refusal in its own field,
        # finish_reason still "stop" (docs/across-providers.md#refusals).
        reply: Json | Stream
        if call.stream:
            reply = self._stream(call, REFUSAL_TEXT, "refusal", "stop")
        else:
            message = {"role": "assistant", "content": None, "refusal": REFUSAL_TEXT}
            reply = self._completion(call, message, "stop", len(text_deltas(REFUSAL_TEXT)))
        return ok(call, reply, self.headers(call))

    def blocked(self, call: Call) -> httpx.Response:
        return self._envelope(
            400,
            "invalid_request_error",
            "invalid_prompt",
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy."
            " Please try again with a different prompt.",
            headers=self.headers(call),
        )

    def _chunk(self, call: Call, delta: Json, finish: str | None = None) -> Json:
        chunk = self._base(call, "chat.completion.chunk")
        chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return chunk

    def stream(self, call: Call, text: str) -> Stream:
        return self._stream(call, text, "content", "stop")

    def _stream(self, call: Call, text: str, field: str, finish: str) -> Stream:
        pieces = text_deltas(text)
        head = [sse(self._chunk(call, {"role": "assistant", "content": "", "refusal": None}))]
        deltas = [sse(self._chunk(call, {field: piece})) for piece in pieces]
        tail = [sse(self._chunk(call, {}, finish))]
        # The usage chunk comes only when asked for, as from the real API
        # (docs/openai.md#openai-request).
        options = call.body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage") is True:
            usage = self._base(call, "chat.completion.chunk")
            usage.update(choices=[], usage=self._usage(call, len(pieces)))
            tail.append(sse(usage))
        tail.append(sse("[DONE]"))
        return Stream(head, deltas, tail)

    # --- errors

    def _envelope(
        self,
        status: int,
        type_: str | None,
        code: str | None,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] = {},
    ) -> httpx.Response:
        error = {"message": message, "type": type_, "param": param, "code": code}
        return json_response(status, {"error": error}, headers)

    def _rate_headers(self, call: Call, retry_after: float | None) -> dict[str, str]:
        reset = "1s" if retry_after is None else format_delay(retry_after)
        headers = {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": reset,
            "x-ratelimit-limit-tokens": "200000",
            "x-ratelimit-remaining-tokens": "199000",
            "x-ratelimit-reset-tokens": "300ms",
        }
        return headers

    def _retry_headers(self, retry_after: float | None) -> dict[str, str]:
        if retry_after is None:
            return {}
        return {
            "retry-after": whole_seconds(retry_after),
            "retry-after-ms": str(round(retry_after * 1000)),
        }

    def error(self, call: Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = {**self.headers(call), **self._retry_headers(retry_after)}
        if status == 429:
            headers.update(self._rate_headers(call, retry_after))
            wait = (
                "" if retry_after is None else f" Please try again in {format_delay(retry_after)}."
            )
            message = (
                f"Rate limit reached for {call.model} in organization org-simulated on requests"
                f" per min (RPM): Limit 500, Used 500, Requested 1.{wait} Visit"
                " https://platform.openai.com/account/rate-limits to learn more."
            )
            return self._envelope(429, "requests", "rate_limit_exceeded", message, headers=headers)
        if status == 404:
            return self._envelope(
                404,
                "invalid_request_error",
                "model_not_found",
                f"The model `{call.model}` does not exist or you do not have access to it.",
                headers=headers,
            )
        type_, code, message = self.errors.get(status, self._generic(status))
        return self._envelope(status, type_, code, message, headers=headers)

    def _generic(self, status: int) -> tuple[str | None, str | None, str]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return (kind, None, reason_phrase(status))

    def overflow(self, call: Call) -> httpx.Response:
        window = call.deployment.context_window
        return self._envelope(
            400,
            "invalid_request_error",
            "context_length_exceeded",
            f"This model's maximum context length is {window} tokens. However, your messages"
            f" resulted in {window + call.input_tokens} tokens. Please reduce the length of"
            " the messages.",
            param="messages",
            headers=self.headers(call),
        )

    def quota(self, call: Call) -> httpx.Response:
        return self._envelope(
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details. For"
            " more information on this error, read the docs:"
            " https://platform.openai.com/docs/guides/error-codes/api-errors.",
            headers=self.headers(call),
        )

    def headers(self, call: Call) -> dict[str, str]:
        return {
            "x-request-id": f"req_{call.tag}",
            "openai-processing-ms": "42",
            "openai-version": "2020-10-01",
        }
