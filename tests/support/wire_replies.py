"""A reply in each provider's own wire format, played by a loopback server: for tests of
what the CLI makes of a reply's text (its citations, a handoff), whichever provider sent
it and however its stream was cut.

    def handler(ex: Exchange) -> None:
        reply(ex, ["Open Settings [", "1]."])   # the deltas; whole when not streamed

The provider is told by the path (OpenAI's and Azure's `/chat/completions`, Anthropic's
`/v1/messages`, Gemini's `:generateContent` and `:streamGenerateContent?alt=sse`), and a
stream by the request (`"stream": true`, Gemini's streaming method). The bodies and
events are the documented ones: OpenAI's chat completion and `chat.completion.chunk`
events ending in `[DONE]`; Anthropic's message and its `message_start` ...
`message_stop` events; Gemini's `GenerateContentResponse` frames, no end marker.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tests.support.loopback import Exchange


def reply(ex: Exchange, deltas: Sequence[str]) -> None:
    text = "".join(deltas)
    if ex.path.endswith("/v1/messages"):
        _anthropic(ex, deltas, text)
    elif ":streamGenerateContent" in ex.path or ":generateContent" in ex.path:
        _gemini(ex, deltas, text)
    else:
        _openai(ex, deltas, text)


def _data(obj: object, event: str | None = None) -> str:
    head = "" if event is None else f"event: {event}\n"
    return f"{head}data: {json.dumps(obj)}\n\n"


def _openai(ex: Exchange, deltas: Sequence[str], text: str) -> None:
    model = ex.json().get("model") or "gpt-4o-mini"
    usage = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
    if not ex.json().get("stream"):
        message = {"role": "assistant", "content": text, "refusal": None}
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1733011200,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": usage,
        }
        ex.respond(200, body)
        return
    ex.start()
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1733011200}
    first = {"role": "assistant", "content": ""}
    ex.send(_data({**head, "model": model, "choices": [{"index": 0, "delta": first}]}))
    for piece in deltas:
        choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        ex.send(_data({**head, "model": model, "choices": [choice]}))
    last = {"index": 0, "delta": {}, "finish_reason": "stop"}
    ex.send(_data({**head, "model": model, "choices": [last]}))
    ex.send(_data({**head, "model": model, "choices": [], "usage": usage}))
    ex.send("data: [DONE]\n\n")
    ex.end()


def _anthropic(ex: Exchange, deltas: Sequence[str], text: str) -> None:
    model = ex.json().get("model") or "claude-haiku-4-5"
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }
    if not ex.json().get("stream"):
        ex.respond(200, message)
        return
    ex.start()
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 20, "output_tokens": 1}
    ex.send(_data({"type": "message_start", "message": start}, "message_start"))
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    ex.send(_data(block, "content_block_start"))
    ex.send(_data({"type": "ping"}, "ping"))
    for piece in deltas:
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": piece}}  # fmt: skip
        ex.send(_data(delta, "content_block_delta"))
    ex.send(_data({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
           "usage": {"output_tokens": 8}}  # fmt: skip
    ex.send(_data(end, "message_delta"))
    ex.send(_data({"type": "message_stop"}, "message_stop"))
    ex.end()


def _gemini(ex: Exchange, deltas: Sequence[str], text: str) -> None:
    usage = {"promptTokenCount": 20, "candidatesTokenCount": 8, "totalTokenCount": 28}

    def frame(piece: str, finish: str | None) -> dict[str, object]:
        candidate: dict[str, object] = {
            "content": {"parts": [{"text": piece}], "role": "model"},
            "index": 0,
        }
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
        }

    if ":streamGenerateContent" not in ex.path:
        ex.respond(200, frame(text, "STOP"))
        return
    ex.start()
    for n, piece in enumerate(deltas):
        ex.send(_data(frame(piece, "STOP" if n == len(deltas) - 1 else None)).replace("\n", "\r\n"))
    ex.end()
