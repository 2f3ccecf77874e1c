"""Anthropic Messages API (docs/anthropic.md).

Request: `x-api-key`, `anthropic-version: 2023-06-01`, top-level `system`, required
`max_tokens`. Reply: text blocks in `content[]`, `stop_reason`, `usage.input_tokens` /
`output_tokens`, `model`. Stream: named events `message_start`, `content_block_*`,
`message_delta` (stop_reason, cumulative output tokens), `message_stop`, any number of
`ping`, and `error` (`{"type":"error","error":{"type":"overloaded_error",...}}` inside the
200). No `message_stop` means the stream was cut.

Three stop reasons are not plain answers:
- `refusal`: returned as a refused Reply (its text, else `stop_details.explanation`): the
  model's own refusal (Anthropic has no separate prompt filter).
- `max_tokens` and `model_context_window_exceeded`: the docs say "treat the response as
  truncated". With text, that is what it is: a Reply marked `cut_short` (by the output
  limit, or by the window), which the engine never passes off as a complete answer. With
  no text at all the window case has no answer, and the cause is the input's size: a
  `context_window` failure, so the engine moves to a bigger window without cooling this
  healthy deployment down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.model import ErrorKind, ProviderError, Reply, Request, Role
from gateway.providers import headroom
from gateway.providers.failures import malformed, protocol_failure, stream_error, unfinished
from gateway.providers.http import HttpProvider
from gateway.providers.jsonshape import as_dict, as_int, as_list, as_str, decode_json
from gateway.providers.turns import alternating

if TYPE_CHECKING:
    from collections.abc import Mapping

    import httpx

    from gateway.config import Deployment
    from gateway.model import Headroom
    from gateway.providers.sse import SseEvent
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
REFUSED = "The model declined to answer this request."
ROLES = {Role.CUSTOMER: "user", Role.AGENT: "assistant"}
# stop_reason values that end an answer before its end (docs/anthropic.md#anthropic-response).
CUT_SHORT = {
    "max_tokens": ErrorKind.OUTPUT_LIMIT,
    "model_context_window_exceeded": ErrorKind.CONTEXT_WINDOW,
}


def _finish(
    text: str,
    *,
    stop_reason: str | None,
    stop_details: dict[str, object],
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
) -> Reply:
    refused = stop_reason == "refusal"
    if refused and not text.strip():
        text = as_str(stop_details.get("explanation")) or REFUSED
    if stop_reason == "model_context_window_exceeded" and not text.strip():
        raise protocol_failure(
            ErrorKind.CONTEXT_WINDOW,
            "the model's context window filled before it wrote any answer "
            "(stop_reason model_context_window_exceeded)",
        )
    return Reply(
        text=text,
        finish_reason=stop_reason,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        refused=refused,
        cut_short=CUT_SHORT.get(stop_reason or ""),
    )


def _error(data: object, now: float) -> ProviderError:
    return stream_error(data, now=now)


def parse_message(data: object, *, now: float) -> Reply:
    """A whole (non-streamed) Message."""
    body = as_dict(data)
    if body.get("type") == "error" or isinstance(body.get("error"), dict):
        raise _error(data, now)
    if not isinstance(body.get("content"), list):
        raise malformed("the reply has no content")
    text = "".join(
        as_str(block.get("text")) or ""
        for block in map(as_dict, as_list(body.get("content")))
        if block.get("type") == "text"
    )
    usage = as_dict(body.get("usage"))
    return _finish(
        text,
        stop_reason=as_str(body.get("stop_reason")),
        stop_details=as_dict(body.get("stop_details")),
        model=as_str(body.get("model")),
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
    )


class MessageStream:
    """Reads a Messages event stream; `message_stop` ends it."""

    __slots__ = (
        "_input_tokens",
        "_model",
        "_now",
        "_output_tokens",
        "_stop_details",
        "_stop_reason",
        "finished",
    )

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.finished = False
        self._model: str | None = None
        self._stop_reason: str | None = None
        self._stop_details: dict[str, object] = {}
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None

    def feed(self, event: SseEvent) -> str:
        data = decode_json(event.data, what="a stream event")
        if not isinstance(data, dict):
            raise malformed(f"a stream event is not a JSON object: {event.data[:80]!r}")
        # The SDK dispatches on the SSE event name; `type` repeats it in the data.
        name = event.event if event.event != "message" else as_str(data.get("type"))
        if name == "content_block_delta":
            delta = as_dict(data.get("delta"))
            return (as_str(delta.get("text")) or "") if delta.get("type") == "text_delta" else ""
        if name == "message_start":
            message = as_dict(data.get("message"))
            self._model = as_str(message.get("model"))
            self._count(as_dict(message.get("usage")))
        elif name == "message_delta":
            delta = as_dict(data.get("delta"))
            self._stop_reason = as_str(delta.get("stop_reason")) or self._stop_reason
            self._stop_details = as_dict(delta.get("stop_details")) or self._stop_details
            self._count(as_dict(data.get("usage")))
        elif name == "message_stop":
            self.finished = True
        elif name == "error":
            raise _error(data, self._now())
        # ping, content_block_start/stop, and event types added later carry no text
        return ""

    def _count(self, usage: dict[str, object]) -> None:
        # message_delta's output_tokens is cumulative: the last one is the total.
        self._input_tokens = as_int(usage.get("input_tokens")) or self._input_tokens
        self._output_tokens = as_int(usage.get("output_tokens")) or self._output_tokens

    def reply(self, text: str) -> Reply:
        if not self.finished:
            return unfinished(self.refused_so_far(text))
        return self._reply(text)

    def refused_so_far(self, text: str) -> Reply | None:
        # message_delta carries the stop reason before message_stop ends the stream
        return self._reply(text) if self._stop_reason == "refusal" else None

    def _reply(self, text: str) -> Reply:
        return _finish(
            text,
            stop_reason=self._stop_reason,
            stop_details=self._stop_details,
            model=self._model,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
        )


def base_url(deployment: Deployment) -> str:
    """The API's root, from a base_url given with or without the version segment."""
    return (deployment.base_url or ANTHROPIC_BASE_URL).rstrip("/").removesuffix("/v1")


def message_body(request: Request, *, model: str | None) -> dict[str, object]:
    """A Messages request's body (without `stream`): what a Message Batch's `params` hold."""
    body: dict[str, object] = {"model": model, "max_tokens": request.max_output_tokens}
    if request.system:
        body["system"] = request.system
    body["messages"] = [
        {"role": ROLES[role], "content": text} for role, text in alternating(request)
    ]
    return body


class AnthropicProvider(HttpProvider):
    def __init__(
        self,
        deployment: Deployment,
        key: Secret | None,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._model = deployment.model
        base = base_url(deployment)
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key.reveal()
        super().__init__(
            deployment,
            url=f"{base}/v1/messages",
            headers=headers,
            transport=transport,
            clock=clock,
        )

    def _body(self, request: Request, *, stream: bool) -> dict[str, object]:
        return {**message_body(request, model=self._model), "stream": stream}

    def _parse(self, data: object) -> Reply:
        return parse_message(data, now=self._now())

    def _parser(self) -> MessageStream:
        return MessageStream(self._now)

    def _headroom(self, headers: Mapping[str, str], now: float) -> Headroom | None:
        return headroom.anthropic(headers, now)
