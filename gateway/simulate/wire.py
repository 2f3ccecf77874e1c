"""What every fake server shares: the call being answered, JSON and SSE framing, streams.

A provider's dialect (`Wire`) lives in its own module and builds on these pieces; what is
the same for all four providers is written once here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import httpx

from gateway.config import Deployment
from gateway.record import record

Json = dict[str, Any]

REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


@record
class Call:
    """What a fake server knows about the request it is answering."""

    request: httpx.Request
    body: Json
    deployment: Deployment
    number: int  # this deployment's call count, from 1
    question: str
    stream: bool
    input_tokens: int
    now: float  # wall clock, epoch seconds

    @property
    def name(self) -> str:
        return self.deployment.name

    @property
    def model(self) -> str:
        return self.deployment.model or self.deployment.name

    @property
    def tag(self) -> str:
        """A request/response id: deterministic, so two runs print the same thing."""
        return f"sim{self.name.encode().hex()[:12]}{self.number:04d}"


class Wire(Protocol):
    """One provider's HTTP dialect, as its fake server speaks it."""

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        """A real server's 404/400 for a wrong path or a malformed body; None if fine."""
        ...

    def question(self, body: Json) -> str: ...

    def streams(self, request: httpx.Request, body: Json) -> bool: ...

    def answer(self, call: Call, text: str) -> httpx.Response: ...

    def stream(self, call: Call, text: str) -> Stream: ...

    def limit(self, call: Call, text: str) -> httpx.Response:
        """`text` cut short by the output limit, with that provider's finish reason."""
        ...

    def empty(self, call: Call) -> httpx.Response:
        """A 200 that carries no answer text at all."""
        ...

    def refusal(self, call: Call) -> httpx.Response: ...

    def blocked(self, call: Call) -> httpx.Response: ...

    def error(self, call: Call, status: int, retry_after: float | None) -> httpx.Response: ...

    def overflow(self, call: Call) -> httpx.Response: ...

    def quota(self, call: Call) -> httpx.Response: ...

    def headers(self, call: Call) -> dict[str, str]: ...


# --------------------------------------------------------------------------- reading requests


def load_body(request: httpx.Request) -> Json | str:
    """The request's JSON object, or the reason it is not one."""
    try:
        body = json.loads(request.read() or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        return str(exc)
    return body if isinstance(body, dict) else "the body is not a JSON object"


def missing_field(body: Json, required: tuple[str, ...]) -> str | None:
    """The first required top-level field the body lacks, as a real server names it."""
    return next((field for field in required if field not in body), None)


def _text_of(content: object) -> str:
    """Text of a message's content: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def last_user(messages: object, content_key: str = "content") -> str:
    """The text of the last user turn: what the customer asked."""
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get(content_key))
    return ""


# --------------------------------------------------------------------------- writing responses


def text_deltas(text: str) -> list[str]:
    """The answer cut into word-sized text deltas that join back to the exact text."""
    return re.findall(r"\s*\S+", text) or [text]


def cut_short(text: str) -> str:
    """The first half of an answer's deltas: where an output limit might stop it."""
    pieces = text_deltas(text)
    return "".join(pieces[: max(1, len(pieces) // 2)])


def whole_seconds(seconds: float) -> str:
    """An HTTP Retry-After value: whole seconds, rounded up so nobody retries early."""
    return str(math.ceil(seconds))


def reason_phrase(status: int) -> str:
    """The status's standard phrase: the message a server sends when it says no more."""
    return httpx.codes.get_reason_phrase(status) or "Error"


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def json_response(status: int, body: object, headers: Mapping[str, str] = {}) -> httpx.Response:
    return httpx.Response(
        status,
        headers={"content-type": "application/json", **headers},
        content=dumps(body),
    )


def sse(data: object, event: str | None = None, *, newline: str = "\n") -> bytes:
    """One server-sent event frame; `data` is JSON unless it is already a string."""
    text = data if isinstance(data, str) else dumps(data).decode()
    lines = ([f"event: {event}"] if event else []) + [f"data: {text}"]
    return (newline.join(lines) + newline * 2).encode()


Hold = Callable[[float], bool]
"""Stay silent for so many seconds (inf: for good); True when the client gave up first."""


class Frames(httpx.SyncByteStream):
    """A response body sent frame by frame; `dropped` ends it like a closed socket.

    `pause` holds back frame number `at` for so many seconds (`hold` does the waiting);
    a client that gives up meanwhile sees its read time out, as its watchdog would make it.
    """

    def __init__(
        self,
        frames: list[bytes],
        *,
        dropped: bool,
        request: httpx.Request,
        pause: tuple[int, float, Hold] | None = None,
    ) -> None:
        self._frames = frames
        self._dropped = dropped
        self._request = request
        self._pause = pause

    def __iter__(self) -> Iterator[bytes]:
        for n, frame in enumerate(self._frames):
            if self._pause is not None and n == self._pause[0]:
                _, seconds, hold = self._pause
                if hold(seconds):
                    raise httpx.ReadTimeout("The read operation timed out", request=self._request)
            yield frame
        if self._pause is not None and self._pause[0] >= len(self._frames):
            _, seconds, hold = self._pause
            if hold(seconds):
                raise httpx.ReadTimeout("The read operation timed out", request=self._request)
        if self._dropped:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
                " (incomplete chunked read)",
                request=self._request,
            )


@record
class Stream:
    """A streamed answer in three parts, so a cut can fall after any text delta."""

    head: list[bytes]
    deltas: list[bytes]
    tail: list[bytes]
    content_type: str = "text/event-stream; charset=utf-8"

    def response(
        self,
        request: httpx.Request,
        headers: Mapping[str, str],
        cut: int | None = None,
        *,
        pause: tuple[int, float, Hold] | None = None,
    ) -> httpx.Response:
        """The stream as a 200; `cut` drops it after that many deltas; `pause` holds back
        delta number N (0: the first) for so many seconds."""
        frames = self.head + (self.deltas if cut is None else self.deltas[:cut])
        if cut is None:
            frames = frames + self.tail
        at = None if pause is None else (len(self.head) + pause[0], pause[1], pause[2])
        return httpx.Response(
            200,
            headers={"content-type": self.content_type, **headers},
            stream=Frames(frames, dropped=cut is not None, request=request, pause=at),
        )


def ok(call: Call, reply: Json | Stream, headers: Mapping[str, str]) -> httpx.Response:
    """A 200: the whole body at once, or a stream sent frame by frame."""
    if isinstance(reply, Stream):
        return reply.response(call.request, headers)
    return json_response(200, reply, headers)
