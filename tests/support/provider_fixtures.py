"""Provider replies as the providers send them, and a MockTransport that replays them.

Each `fixtures/providers/<provider>.json` maps a case name to one HTTP reply: `source`
(where the payload comes from: a docs page, an SDK file, a GitHub thread, or the section
of docs/providers.md that sums it up with its source), `status`, `headers`, and the body as
`body` (JSON), `text` (raw text), or `sse` (the event stream's lines, each ended by
`newline`, so CRLF streams stay CRLF).

    from tests.support.provider_fixtures import case, replay

    transport = replay("openai/stream", "openai/429_rate_limit", chunk=7)

`replay` answers each request with the next case in order (and records the requests it
saw on `transport.requests`); `chunk` splits bodies into pieces of that many bytes, so a
frame, a CRLF or a UTF-8 character may straddle two reads as it can on a real socket.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent / "fixtures" / "providers"


@cache
def _file(provider: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / f"{provider}.json").read_text(encoding="utf-8"))
    return data


def case(name: str) -> dict[str, Any]:
    """The case `provider/name`, e.g. "gemini/429_per_minute"."""
    provider, _, key = name.partition("/")
    found: dict[str, Any] = _file(provider)[key]
    return found


def body_bytes(name: str) -> bytes:
    c = case(name)
    if "sse" in c:
        newline = c.get("newline", "\n")
        return "".join(line + newline for line in c["sse"]).encode()
    if "text" in c:
        return str(c["text"]).encode()
    return json.dumps(c["body"]).encode()


class _Pieces(httpx.SyncByteStream):
    def __init__(self, data: bytes, size: int) -> None:
        self._data = data
        self._size = size

    def __iter__(self) -> Iterator[bytes]:
        for at in range(0, len(self._data), self._size):
            yield self._data[at : at + self._size]


def response(name: str, *, chunk: int | None = None) -> httpx.Response:
    c = case(name)
    data = body_bytes(name)
    headers = {k: v for k, v in c["headers"].items() if k.lower() != "content-length"}
    if chunk:
        return httpx.Response(c["status"], headers=headers, stream=_Pieces(data, chunk))
    return httpx.Response(c["status"], headers=headers, content=data)


class Replay(httpx.MockTransport):
    def __init__(self, names: tuple[str, ...], chunk: int | None) -> None:
        self.requests: list[httpx.Request] = []
        pending = list(names)

        def answer(request: httpx.Request) -> httpx.Response:
            request.read()
            self.requests.append(request)
            if not pending:
                raise AssertionError(f"unexpected extra request to {request.url}")
            return response(pending.pop(0), chunk=chunk)

        super().__init__(answer)


def replay(*names: str, chunk: int | None = None) -> Replay:
    return Replay(names, chunk)
