"""An OpenAI-compatible server on 127.0.0.1 that answers every POST at once.

It answers a canned, valid `chat.completion` with a Content-Length and keeps the
connection alive (HTTP/1.1), so what the benchmarks measure is the client's cost, not the
server's. It remembers the last request body, so a baseline can replay exactly the POST
support-ask sent.

`python -m bench.loopback` serves in its own process and prints its port: the in-process
benchmark uses that, so the server's Python work does not share the measured
interpreter's GIL.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = "Open Settings, then Security, and choose Reset password."

COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 812, "completion_tokens": 12, "total_tokens": 824},
        "system_fingerprint": "fp_bench",
    }
).encode()


RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: " + str(len(COMPLETION)).encode() + b"\r\n"
    b"\r\n" + COMPLETION
)


# A streamed answer: the first delta at once, the rest after STREAM_GAP seconds. A client
# that buffers would hand its user the first token only after the gap.
STREAM_GAP = 0.02
FIRST_DELTA = "Open Settings,"


def _chunk(delta: dict[str, str], finish_reason: str | None = None) -> bytes:
    frame = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    data = b"data: " + json.dumps(frame).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)  # one HTTP/1.1 chunk


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)
STREAM_FIRST = _chunk({"role": "assistant", "content": FIRST_DELTA})
STREAM_REST = (
    _chunk({"content": ANSWER[len(FIRST_DELTA) :]})
    + _chunk({}, "stop")
    + b"%x\r\n%s\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n")
    + b"0\r\n\r\n"
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    # Real API servers do not hold small writes back; with Nagle's algorithm on, the
    # client's delayed ACK would add 40 ms to every kept-alive exchange.
    disable_nagle_algorithm = True
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.last_body = body
        self.server.last_path = self.path
        if b'"stream":true' not in body.replace(b" ", b""):
            self.wfile.write(RESPONSE)  # status, headers and body in one segment
            return
        self.wfile.write(STREAM_HEAD + STREAM_FIRST)
        self.wfile.flush()
        time.sleep(STREAM_GAP)
        self.wfile.write(STREAM_REST)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a line per request on stderr would cost more than the answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    last_body: bytes = b""
    last_path: str = ""


class Loopback:
    """The server, running on a daemon thread of this process."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def last_body(self) -> bytes:
        return self._server.last_body

    def __enter__(self) -> Loopback:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    with Loopback() as server:
        print(server.port, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or dies)


if __name__ == "__main__":
    main()
