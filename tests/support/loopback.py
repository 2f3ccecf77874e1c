"""A real HTTP/1.1 server on 127.0.0.1, in a thread, for what only real sockets show:
timeouts, refused connections, bytes trickling in, a connection dropped mid-stream.

Standard library only. A test hands the server a function that plays one exchange:

    from tests.support.loopback import Exchange, LoopbackServer

    def handler(ex: Exchange) -> None:
        ex.start()                          # 200, text/event-stream, chunked
        ex.send(b'data: {"x": 1}\\n\\n')     # one chunk, flushed at once
        ex.pause(0.2)                       # returns early (False) if the server stops
        ex.drop()                           # cut the connection without ending the body

    with LoopbackServer(handler) as server:
        call(server.url + "/v1/chat/completions")
        assert server.exchanges[0].json()["stream"] is True

`Exchange.respond(status, body, headers=...)` sends a whole reply instead (a dict body is
sent as JSON); `send_raw` writes bytes unframed (a status line sent piecemeal). A handler
that returns after `start()` without `end()` drops the connection, so the client sees the
body cut short. Keep-alive works: several requests on one connection each get their own
`Exchange`, in order (`server.connections` counts connections). `refused_url()` gives a
URL on a port where nothing listens. Stopping the server (leaving the `with`) wakes every `pause`
and `hang`, so a test never waits for a handler's sleep.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

__all__ = ["Exchange", "Handler", "LoopbackServer", "refused_url"]


class Exchange:
    """One request as the server received it, and the means to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler, stopping: threading.Event) -> None:
        self._handler = handler
        self._stopping = stopping
        self.method: str = handler.command
        self.path: str = handler.path
        self.headers: dict[str, str] = {k.lower(): v for k, v in handler.headers.items()}
        length = int(self.headers.get("content-length") or 0)
        self.body: bytes = handler.rfile.read(length) if length else b""
        self.streaming = False
        self.ended = False
        self.dropped = False

    def json(self) -> Any:
        return json.loads(self.body)

    # -- whole replies -----------------------------------------------------------------------

    def respond(
        self,
        status: int,
        body: bytes | str | Mapping[str, Any] | list[Any] = b"",
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        if isinstance(body, Mapping | list):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else body
        self._head(status, {"content-type": content_type, **(headers or {})}, len(data))
        self._write(data)
        self.ended = True

    # -- streamed replies --------------------------------------------------------------------

    def start(
        self,
        status: int = 200,
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str = "text/event-stream",
    ) -> None:
        """Send the status line and headers of a chunked reply."""
        self._head(status, {"content-type": content_type, **(headers or {})}, None)
        self.streaming = True

    def send(self, data: bytes | str) -> None:
        """Send one chunk of a chunked reply, flushed at once."""
        raw = data.encode() if isinstance(data, str) else data
        if raw:
            self._write(b"%x\r\n%s\r\n" % (len(raw), raw))

    def send_raw(self, data: bytes | str) -> None:
        """Write bytes as they are, no framing: a status line or header sent piecemeal."""
        self._write(data.encode() if isinstance(data, str) else data)

    def end(self) -> None:
        """End a chunked reply cleanly."""
        self._write(b"0\r\n\r\n")
        self.ended = True

    def drop(self) -> None:
        """Cut the connection now, mid-reply: the client sees the body end early."""
        self.dropped = True
        self._handler.close_connection = True
        sock = self._handler.connection
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    # -- time ----------------------------------------------------------------------------------

    def pause(self, seconds: float) -> bool:
        """Wait; False when the server is stopping (the handler should return)."""
        return not self._stopping.wait(seconds)

    def hang(self) -> None:
        """Say nothing until the server stops."""
        self._stopping.wait()

    # -- plumbing ------------------------------------------------------------------------------

    def _head(self, status: int, headers: Mapping[str, str], length: int | None) -> None:
        h = self._handler
        h.send_response_only(status)
        for name, value in headers.items():
            h.send_header(name, value)
        if length is None:
            h.send_header("transfer-encoding", "chunked")
        else:
            h.send_header("content-length", str(length))
        h.end_headers()
        h.wfile.flush()

    def _write(self, data: bytes) -> None:
        self._handler.wfile.write(data)
        self._handler.wfile.flush()


Handler = Callable[[Exchange], None]


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, chunked replies
    server: _Server

    def _serve(self) -> None:
        self.server.owner._play(self)

    do_POST = do_GET = _serve

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    owner: LoopbackServer


class LoopbackServer:
    """Serves `handler` on 127.0.0.1 at a free port while the `with` block runs."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _RequestHandler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.daemon = True
        self.exchanges: list[Exchange] = []
        self.connections = 0
        self._seen: set[int] = set()
        self.errors: list[BaseException] = []

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=2)

    def _play(self, request: BaseHTTPRequestHandler) -> None:
        if id(request) not in self._seen:
            self._seen.add(id(request))
            self.connections += 1
        exchange = Exchange(request, self._stopping)
        self.exchanges.append(exchange)
        try:
            self._handler(exchange)
            if exchange.streaming and not exchange.ended and not exchange.dropped:
                exchange.drop()  # a handler that just returns mid-stream cuts the connection
        except (BrokenPipeError, ConnectionResetError):
            request.close_connection = True  # the client went away: nothing to answer
        except BaseException as exc:  # a bug in the test's handler: keep it for the test
            self.errors.append(exc)
            request.close_connection = True


def refused_url() -> str:
    """An http:// URL on 127.0.0.1 where nothing listens: bind a free port, then close it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
