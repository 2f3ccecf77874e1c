"""Gemini generateContent / streamGenerateContent, as its fake server speaks it
(docs/gemini.md).

The status is the meaning; Gemini decides the wire: it reports a bad key as 400
INVALID_ARGUMENT with reason API_KEY_INVALID, so `401` answers that. A Retry-After goes
in the body (`RetryInfo.retryDelay`) and the message ("Please retry in ..."), never in a
header. A stream is SSE with CRLF frames when asked with `alt=sse`, else one JSON array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from gateway.config import Deployment
from gateway.simulate.wire import (
    Call,
    Json,
    Stream,
    cut_short,
    dumps,
    json_response,
    last_user,
    load_body,
    ok,
    reason_phrase,
    sse,
    text_deltas,
)

_RPC_STATUS: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "RESOURCE_EXHAUSTED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_FIELDS = frozenset(
    {
        "model",
        "contents",
        "tools",
        "toolConfig",
        "tool_config",
        "safetySettings",
        "safety_settings",
        "systemInstruction",
        "system_instruction",
        "generationConfig",
        "generation_config",
        "cachedContent",
        "cached_content",
    }
)

_RPC = "type.googleapis.com/google.rpc."
_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"

_SAFETY: list[Json] = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
]


class GeminiWire:
    """Gemini generateContent / streamGenerateContent (docs/gemini.md)."""

    messages: Mapping[int, str] = {
        400: 'Invalid JSON payload received. Unknown name "max_tokens": Cannot find field.',
        403: "The caller does not have permission",
        500: "An internal error has occurred. Please retry or report in"
        " https://developers.generativeai.google/guide/troubleshooting",
        503: "The model is overloaded. Please try again later.",
        504: "Deadline expired before operation could complete.",
    }

    def _method(self, request: httpx.Request, deployment: Deployment) -> str | None:
        path = request.url.path
        model = (deployment.model or "").removeprefix("models/")
        for method in ("generateContent", "streamGenerateContent"):
            if path.endswith(f"/models/{model}:{method}"):
                return method
        return None

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        method = self._method(request, deployment)
        if method is None or request.method != "POST":
            path = request.url.path
            if ":generateContent" in path or ":streamGenerateContent" in path:
                model = path.rsplit("/models/", 1)[-1].split(":")[0]
                return self._not_found(model, {})
            return self._envelope(404, f"Method not found: {path}", {})
        body = load_body(request)
        if isinstance(body, str):
            return self._envelope(400, "Invalid JSON payload received. Unexpected token.", {})
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            return self._envelope(
                400,
                f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
                {},
                details=[
                    {
                        "@type": _RPC + "BadRequest",
                        "fieldViolations": [
                            {
                                "description": f"Invalid JSON payload received. Unknown name"
                                f' "{unknown[0]}": Cannot find field.'
                            }
                        ],
                    }
                ],
            )
        if not body.get("contents"):
            return self._envelope(
                400, "* GenerateContentRequest.contents: contents is not specified\n", {}
            )
        return None

    def question(self, body: Json) -> str:
        contents = body.get("contents")
        return last_user(contents, content_key="parts") if isinstance(contents, list) else ""

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return request.url.path.endswith(":streamGenerateContent")

    def _envelope(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str],
        *,
        rpc_status: str | None = None,
        details: list[Json] | None = None,
    ) -> httpx.Response:
        error: Json = {
            "code": status,
            "message": message,
            "status": rpc_status or _RPC_STATUS.get(status, "UNKNOWN"),
        }
        if details:
            error["details"] = details
        return json_response(status, {"error": error}, headers)

    def _not_found(self, model: str, headers: Mapping[str, str]) -> httpx.Response:
        return self._envelope(
            404,
            f"models/{model} is not found for API version v1beta, or is not supported for"
            " generateContent. Call ListModels to see the list of available models and their"
            " supported methods.",
            headers,
        )

    def _usage(self, call: Call, output_tokens: int | None) -> Json:
        usage: Json = {
            "promptTokenCount": call.input_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": call.input_tokens}],
        }
        if output_tokens is None:
            usage["totalTokenCount"] = call.input_tokens
        else:
            usage["candidatesTokenCount"] = output_tokens
            usage["totalTokenCount"] = call.input_tokens + output_tokens
        return usage

    def _response(self, call: Call, candidate: Json | None, usage: Json, **extra: Any) -> Json:
        body: Json = {} if candidate is None else {"candidates": [candidate]}
        body.update(extra)
        body.update(usageMetadata=usage, modelVersion=call.model, responseId=call.tag)
        return body

    def _candidate(self, text: str | None, finish: str | None = None, **extra: Any) -> Json:
        candidate: Json = {}
        if text is not None:
            candidate["content"] = {"parts": [{"text": text}], "role": "model"}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate.update(extra)
        candidate["index"] = 0
        return candidate

    def answer(self, call: Call, text: str) -> httpx.Response:
        body = self._response(
            call, self._candidate(text, "STOP"), self._usage(call, len(text_deltas(text)))
        )
        return json_response(200, body, self.headers(call))

    def stream(self, call: Call, text: str) -> Stream:
        pieces = text_deltas(text)
        frames = [
            self._response(call, self._candidate(piece), self._usage(call, None))
            for piece in pieces
        ]
        last = self._response(call, self._candidate("", "STOP"), self._usage(call, len(pieces)))
        return self._frames(call, frames, [last])

    def _frames(self, call: Call, deltas: list[Json], tail: list[Json]) -> Stream:
        if call.request.url.params.get("alt") == "sse":
            return Stream(
                [],
                [sse(f, newline="\r\n") for f in deltas],
                [sse(f, newline="\r\n") for f in tail],
                content_type="text/event-stream",
            )
        # Without alt=sse the stream endpoint sends one JSON array, element by element.
        frames = [dumps(f) for f in deltas + tail]
        pieces = [(b"[" if i == 0 else b",\r\n") + f for i, f in enumerate(frames)]
        pieces[-1] += b"]"
        return Stream(
            [],
            pieces[: len(deltas)],
            pieces[len(deltas) :],
            content_type="application/json; charset=UTF-8",
        )

    def _whole(self, call: Call, body: Json) -> httpx.Response:
        """A 200 with no text to stream: one body, or a stream of that one chunk."""
        return ok(call, self._frames(call, [], [body]) if call.stream else body, self.headers(call))

    def limit(self, call: Call, text: str) -> httpx.Response:
        text = cut_short(text)
        pieces = text_deltas(text)
        usage = self._usage(call, len(pieces))
        if not call.stream:
            body = self._response(call, self._candidate(text, "MAX_TOKENS"), usage)
            return json_response(200, body, self.headers(call))
        frames = [
            self._response(call, self._candidate(piece), self._usage(call, None))
            for piece in pieces
        ]
        last = self._response(call, self._candidate("", "MAX_TOKENS"), usage)
        stream = self._frames(call, frames, [last])
        return stream.response(call.request, self.headers(call))

    def empty(self, call: Call) -> httpx.Response:
        # A candidate with a finish reason and no content at all
        # (docs/gemini.md#gemini-response).
        body = self._response(call, self._candidate(None, "STOP"), self._usage(call, 0))
        return self._whole(call, body)

    def refusal(self, call: Call) -> httpx.Response:
        # The answer was blocked: finishReason SAFETY, no content
        # (docs/gemini.md#gemini-response).
        body = self._response(
            call,
            self._candidate(None, "SAFETY", safetyRatings=_SAFETY),
            self._usage(call, 0),
        )
        return self._whole(call, body)

    def blocked(self, call: Call) -> httpx.Response:
        # The prompt was blocked: promptFeedback.blockReason and no candidates at all.
        body = self._response(
            call,
            None,
            self._usage(call, None),
            promptFeedback={"blockReason": "SAFETY", "safetyRatings": _SAFETY},
        )
        return self._whole(call, body)

    def error(self, call: Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = self.headers(call)
        details: list[Json] = []
        wait = ""
        if retry_after is not None:
            delay = f"{retry_after:.3f}".rstrip("0").rstrip(".") + "s"
            details.append({"@type": _RPC + "RetryInfo", "retryDelay": delay})
            wait = f"\nPlease retry in {delay}."
        if status == 401:
            # Gemini reports a bad key as 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
            info = {
                "@type": _RPC + "ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
            return self._envelope(
                400,
                "API key not valid. Please pass a valid API key.",
                headers,
                details=[info, *details],
            )
        if status == 404:
            return self._not_found(call.model, headers)
        if status == 429:
            per_minute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
            return self._exhausted(call, per_minute, 10, wait=wait, details=details)
        message = self.messages.get(status, reason_phrase(status)) + wait
        return self._envelope(status, message, headers, details=details)

    def _exhausted(
        self, call: Call, quota_id: str, limit: int, *, wait: str = "", details: Sequence[Json] = ()
    ) -> httpx.Response:
        """A 429 RESOURCE_EXHAUSTED naming the quota: per minute (a rate) or per day."""
        failure = {
            "@type": _RPC + "QuotaFailure",
            "violations": [
                {
                    "quotaMetric": _METRIC,
                    "quotaId": quota_id,
                    "quotaDimensions": {"location": "global", "model": call.model},
                    "quotaValue": str(limit),
                }
            ],
        }
        message = (
            "You exceeded your current quota, please check your plan and billing details. For"
            " more information on this error, head to:"
            f" https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric:"
            f" {_METRIC}, limit: {limit}, model: {call.model}{wait}"
        )
        return self._envelope(429, message, self.headers(call), details=[failure, *details])

    def overflow(self, call: Call) -> httpx.Response:
        window = call.deployment.context_window
        return self._envelope(
            400,
            f"The input token count ({window + call.input_tokens}) exceeds the maximum number"
            f" of tokens allowed ({window}).",
            self.headers(call),
        )

    def quota(self, call: Call) -> httpx.Response:
        # A per-day quota: sticky until midnight Pacific, so not worth a retry.
        return self._exhausted(call, "GenerateRequestsPerDayPerProjectPerModel-FreeTier", 250)

    def headers(self, call: Call) -> dict[str, str]:
        return {"server": "scaffolding on HTTPServer2", "x-gemini-service-tier": "standard"}
