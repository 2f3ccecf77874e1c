"""Azure OpenAI, as its fake server speaks it: OpenAI's shape plus Azure's own
(docs/azure.md).

What Azure adds: content-filter results on every answer and chunk, a first stream chunk
with empty choices, string error codes, its own 401/404/429 wording, and the output
filter (finish_reason content_filter) as its refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from gateway.config import Deployment
from gateway.record import replace
from gateway.simulate.addresses import AZURE_API_VERSION
from gateway.simulate.openai import OpenAIWire
from gateway.simulate.wire import (
    Call,
    Json,
    Stream,
    json_response,
    ok,
    reason_phrase,
    sse,
    whole_seconds,
)

_AZURE_SAFE = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "sexual": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": False, "severity": "safe"},
}


class AzureWire(OpenAIWire):
    """Azure OpenAI: OpenAI's shape plus content-filter results, string error codes."""

    required = ("messages",)  # the deployment in the path names the model

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        path = request.url.path
        classic = f"/openai/deployments/{deployment.model}/chat/completions"
        if path.endswith(classic):
            if "api-version" not in request.url.params:
                return self._azure_error(
                    404, "404", "Resource not found", headers={"apim-request-id": "sim"}
                )
        elif "/openai/deployments/" in path and path.endswith(self.path_end):
            return self._deployment_not_found({})
        elif not path.endswith("/openai/v1/chat/completions"):
            return self._azure_error(404, "404", "Resource not found", headers={})
        return super().reject(request, deployment)

    def _azure_error(
        self, http_status: int, code: str, message: str, *, headers: Mapping[str, str], **extra: Any
    ) -> httpx.Response:
        body = {"error": {"code": code, "message": message, **extra}}
        return json_response(http_status, body, headers)

    def _deployment_not_found(self, headers: Mapping[str, str]) -> httpx.Response:
        return self._azure_error(
            404,
            "DeploymentNotFound",
            "The API deployment for this resource does not exist. If you created the deployment"
            " within the last 5 minutes, please wait a moment and try again.",
            headers=headers,
        )

    def _filters(self) -> list[Json]:
        return [
            {
                "prompt_index": 0,
                "content_filter_results": {
                    **_AZURE_SAFE,
                    "jailbreak": {"filtered": False, "detected": False},
                },
            }
        ]

    def _choice(self, message: Json, finish: str) -> Json:
        choice = super()._choice(message, finish)
        filtered = finish == "content_filter"
        choice["content_filter_results"] = {
            **_AZURE_SAFE,
            "violence": {"filtered": filtered, "severity": "high" if filtered else "safe"},
        }
        return choice

    def _completion(self, call: Call, message: Json, finish: str, tokens: int) -> Json:
        body = super()._completion(call, message, finish, tokens)
        body["prompt_filter_results"] = self._filters()
        return body

    def _chunk(self, call: Call, delta: Json, finish: str | None = None) -> Json:
        chunk = super()._chunk(call, delta, finish)
        chunk["choices"][0]["content_filter_results"] = {} if "role" in delta else dict(_AZURE_SAFE)
        return chunk

    def _stream(self, call: Call, text: str, field: str, finish: str) -> Stream:
        stream = super()._stream(call, text, field, finish)
        # Azure's first chunk carries only the prompt's filter results: choices is empty.
        first = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": self._filters(),
        }
        return replace(stream, head=[sse(first), *stream.head])

    def refusal(self, call: Call) -> httpx.Response:
        # Azure's output filter: a 200 whose finish_reason is content_filter and whose
        # content is withheld (docs/azure.md#azure-response).
        reply: Json | Stream
        if call.stream:
            reply = self._stream(call, "", "content", "content_filter")
        else:
            message = {"role": "assistant", "content": None}
            reply = self._completion(call, message, "content_filter", 0)
        return ok(call, reply, self.headers(call))

    def blocked(self, call: Call) -> httpx.Response:
        return self._azure_error(
            400,
            "content_filter",
            "The response was filtered due to the prompt triggering Azure OpenAI's content"
            " management policy. Please modify your prompt and retry. To learn more about our"
            " content filtering policies please read our documentation:"
            " https://go.microsoft.com/fwlink/?linkid=2198766",
            headers=self.headers(call),
            type=None,
            param="prompt",
            status=400,
            innererror={
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    **_AZURE_SAFE,
                    "violence": {"filtered": True, "severity": "medium"},
                },
            },
        )

    def _rate_headers(self, call: Call, retry_after: float | None) -> dict[str, str]:
        return {"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"}

    def error(self, call: Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = {**self.headers(call), **self._retry_headers(retry_after)}
        wait = (
            ""
            if retry_after is None
            else f" Please retry after {whole_seconds(retry_after)} seconds."
        )
        if status == 429:
            headers.update(self._rate_headers(call, retry_after))
            message = (
                f"{_exceeded(call)} token rate limit of your current OpenAI S0 pricing"
                f" tier.{wait} Please go here: https://aka.ms/oai/quotaincrease if you would"
                " like to further increase the default rate limit."
            )
            return self._azure_error(429, "429", message, headers=headers)
        if status == 401:
            return self._azure_error(
                401,
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure"
                " to provide a valid key for an active subscription and use a correct regional"
                " API endpoint for your resource.",
                headers=headers,
            )
        if status == 404:
            return self._deployment_not_found(headers)
        if status == 400:
            return self._envelope(
                400,
                "invalid_request_error",
                None,
                "Unrecognized request argument supplied: max_tokens_to_sample",
                headers=headers,
            )
        messages = {
            403: "Access denied due to Virtual Network/Firewall rules.",
            500: "The server had an error processing your request. Sorry about that!",
            503: "The service is temporarily unable to process your request. Please try again"
            " later.",
        }
        message = messages.get(status, reason_phrase(status))
        return self._azure_error(status, str(status), message + wait, headers=headers)

    def quota(self, call: Call) -> httpx.Response:
        # An Azure deployment with no quota assigned: a 429 telling you to wait a day.
        headers = {**self.headers(call), "retry-after": "86400"}
        return self._azure_error(
            429,
            "429",
            f"{_exceeded(call)} call rate limit of your current AIServices S0 pricing tier."
            " Please retry after 86400 seconds. Please contact Azure support service if you"
            " would like to further increase the default rate limit.",
            headers=headers,
        )

    def headers(self, call: Call) -> dict[str, str]:
        return {"apim-request-id": call.tag, "x-ms-region": "Sweden Central"}


def _exceeded(call: Call) -> str:
    """How every Azure 429 begins: the operation and API version that ran out."""
    version = call.deployment.api_version or AZURE_API_VERSION
    return (
        "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version"
        f" {version} have exceeded"
    )
