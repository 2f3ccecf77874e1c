"""The HTTP layer every provider adapter shares, and THE one place foreign exceptions become ours.

What lives here and nowhere else:

- one `httpx.Client` per adapter: explicit connect/read/write/pool timeouts, no redirects,
  no retries (httpx's transports retry nothing unless asked; we never ask: the engine is the
  only retry loop), at most one connection so the watchdog knows which socket is in use;
- the whole-attempt deadline: httpx's timeouts bound each socket operation, not the call,
  so a server trickling one byte a second would never trip them. The deadline is checked
  between chunks on the injected `Clock`, and a watchdog shuts the socket down when a read
  is still blocked in the kernel at the deadline (closing a socket from another thread does
  not wake a blocked read; shutting it down does);
- status, headers and body of a non-2xx handed to `gateway.errors.classify_response`, and
  every transport exception to `classify_exception`, raised as `ProviderError` (the
  classifier is imported on the first failure: a good answer never loads it);
- server-sent events decoded incrementally, so a streamed delta reaches `on_text` as soon
  as its frame is complete;
- the `--debug` HTTP log on `support_ask.http`, with credentials redacted.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import functools
import heapq
import itertools
import json
import logging
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import httpx

from gateway.clock import SystemClock
from gateway.model import ErrorKind, Failure, ProviderError, Reply, Request, TextSink

if TYPE_CHECKING:
    import ssl

    from gateway.config import Deployment
    from gateway.seams import Clock

log = logging.getLogger("support_ask.http")

CONNECT_TIMEOUT_S = 5.0  # what the official SDKs use; also capped by the attempt's own timeout
MAX_ERROR_BODY = 64 * 1024  # enough for any provider's error JSON; an HTML page is cut
MAX_BODY = 8 * 1024 * 1024  # a reply of a few hundred tokens is a few KiB; this is a runaway guard

# Header names whose values are credentials, and fragments that make any other name suspect
# (a deployment's extra headers may carry a proxy's token).
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie"}
)
_SECRET_FRAGMENTS = ("key", "auth", "token", "secret", "cookie", "password")
_SECRET_QUERY = re.compile(r"([?&](?:key|api[-_]?key|access_token|token)=)[^&#]*", re.IGNORECASE)
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "apim-request-id")
# httpcore's trace events that hand over a freshly connected network stream: direct, and
# through an HTTP(S) or SOCKS proxy.
_CONNECTED = frozenset(
    f"{via}.{step}.complete"
    for via in ("connection", "proxy", "socks")
    for step in ("connect_tcp", "start_tls")
)


# --- JSON helpers: provider bodies are read defensively, a wrong shape never crashes ---------


def as_dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    # bool is an int to Python, never a token count to a provider
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def carries_error(data: object) -> bool:
    """A JSON body that is an error envelope: {"error": ...}, or Gemini's [{"error": ...}]."""
    if isinstance(data, list):
        data = data[0] if data else None
    return isinstance(data, dict) and bool(data.get("error"))


def encode(body: Mapping[str, object]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def protocol_failure(kind: ErrorKind, detail: str) -> ProviderError:
    """A failure the wire protocol itself proves (no HTTP error to classify): a 2xx body
    that is not JSON, a stream cut before its end marker, the attempt's deadline.

    The kind is what the protocol says happened; what to do about it stays the
    classifier's table (`errors.default_decision`), so nothing is decided here.
    """
    from gateway import errors

    return ProviderError(Failure(kind, errors.default_decision(kind), errors.redact(detail)))


def stream_error(payload: object, *, now: float) -> ProviderError:
    """An error carried inside a 200 (an error event or frame, an error choice)."""
    from gateway import errors

    return ProviderError(errors.classify_stream_error(payload, now=now))


def malformed(detail: str) -> ProviderError:
    """A 2xx whose body breaks the protocol: the server's fault, as the classifier reads
    an undecodable body."""
    return protocol_failure(ErrorKind.SERVER, detail)


def truncated(detail: str = "the stream ended before the model finished") -> ProviderError:
    """A stream that stopped without its end marker: a dropped connection, in effect."""
    return protocol_failure(ErrorKind.NETWORK, detail)


def decode_json(data: str | bytes, *, what: str) -> object:
    try:
        return json.loads(data)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        raise malformed(f"{what} is not valid JSON: {_excerpt(data)}") from None


def _excerpt(data: str | bytes, limit: int = 80) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")


# --- server-sent events ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str  # "message" when the frame names none (OpenAI, Gemini)
    data: str  # the frame's data lines joined with "\n"


_NEWLINE = re.compile(r"\r\n|\r|\n")


class SseDecoder:
    """Decodes an event stream incrementally, as the WHATWG spec interprets one.

    Lines end in CRLF, LF or CR (Gemini sends CRLF; a CRLF may be split across two chunks);
    lines starting with ':' are comments (OpenRouter's ': OPENROUTER PROCESSING'); several
    `data:` lines make one event joined by newlines; a blank line dispatches. An event left
    without its blank line at EOF is discarded, as the spec says.
    """

    __slots__ = ("_data", "_event", "_skip_lf", "_started", "_tail", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        text = self._text.decode(chunk)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        buffered = self._tail + text
        lines = _NEWLINE.split(buffered)
        self._tail = lines.pop()
        self._skip_lf = buffered.endswith("\r")
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(SseEvent(self._event or "message", "\n".join(self._data)))
                self._event = ""
                self._data = []
            elif line[0] != ":":
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    self._data.append(value)
                elif name == "event":
                    self._event = value
                # `id` and `retry` steer reconnection, which a one-shot answer never does
        return events


class StreamParser(Protocol):
    """One provider's reading of its event stream, driven by `HttpClient.stream_reply`."""

    @property
    def finished(self) -> bool:
        """The stream's own end marker arrived: stop reading."""
        ...

    def feed(self, event: SseEvent) -> str:
        """The text delta this event carries for the user ('' if none).

        Raises ProviderError for an error event or a frame that is not valid JSON.
        """
        ...

    def reply(self, text: str) -> Reply:
        """The answer once the stream is over; raises ProviderError if it ended unfinished."""
        ...


# --- the whole-attempt deadline -------------------------------------------------------------


class _Alarm:
    __slots__ = ("_action", "_lock", "cancelled")

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action
        self._lock = threading.Lock()
        self.cancelled = False

    def cancel(self) -> None:
        # Under the lock: once cancel() returns, the action has either run or never will.
        with self._lock:
            self.cancelled = True

    def fire(self) -> None:
        with self._lock:
            if not self.cancelled:
                self.cancelled = True
                self._action()


class _Watchdog:
    """One daemon thread for the whole process, running actions at real-time deadlines.

    One thread shared by all attempts makes arming an alarm a heap push; a thread started
    per attempt would cost more than building and parsing the request itself.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Alarm]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, delay: float, action: Callable[[], None]) -> _Alarm:
        alarm = _Alarm(action)
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), alarm))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="support-ask-deadline", daemon=True
                )
                self._thread.start()
            elif self._heap[0][2] is alarm:
                self._cond.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        alarm = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(wait)
            alarm.fire()


_watchdog = _Watchdog()


class _Deadline:
    """One attempt's end, on the injected clock; `expired` is set when the watchdog fired."""

    __slots__ = ("at", "expired", "stream", "timeout")

    def __init__(self, at: float, timeout: float) -> None:
        self.at = at
        self.timeout = timeout
        self.expired = False
        self.stream: object = None  # the httpcore network stream, once connected


def _shutdown(stream: object) -> None:
    get_extra_info = getattr(stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing is blocked on it
            sock.shutdown(socket.SHUT_RDWR)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~20 ms: once per process, shared by every adapter.
    # trust_env keeps SSL_CERT_FILE / SSL_CERT_DIR working.
    return httpx.create_ssl_context(trust_env=True)


@functools.cache
def _no_ca_context() -> ssl.SSLContext:
    # For a plain-http endpoint (a local Ollama or vLLM) the CA bundle is never needed.
    # This context still verifies (it trusts no CA at all), so if TLS ever did happen on
    # such a client it would fail closed, never open.
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _is_secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_HEADERS or any(f in low for f in _SECRET_FRAGMENTS)


def _secret_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    values: set[str] = set()
    for name, value in headers.items():
        if _is_secret(name):
            values.add(value)
            values.add(value.partition(" ")[2])  # the token after "Bearer "
    # Longest first, so a token is not half-replaced by a shorter one; very short values
    # would scrub ordinary words.
    return tuple(sorted((v for v in values if len(v) >= 8), key=len, reverse=True))


def redact_url(url: str) -> str:
    return _SECRET_QUERY.sub(r"\1***", url)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): "***" if _is_secret(name) else value for name, value in headers.items()}


# --- the client -----------------------------------------------------------------------------


class HttpClient:
    """One adapter's connection to its provider; `headers` are sent on every request.

    `transport` replaces the network (httpx.MockTransport in tests, the simulator); with
    the real network, a watchdog enforces each attempt's deadline on the socket itself.
    `tls=False` (an http:// endpoint) skips loading the CA bundle.
    """

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        tls: bool = True,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._sockets = transport is None
        self._connect_timeout = connect_timeout
        self._last_stream: object = None
        self._secrets = _secret_values(headers)
        self._client = httpx.Client(
            headers={"user-agent": "support-ask", "content-type": "application/json", **headers},
            transport=transport,
            verify=(_ssl_context() if tls else _no_ca_context()) if transport is None else True,
            follow_redirects=False,
            timeout=httpx.Timeout(connect=connect_timeout, read=60.0, write=60.0, pool=60.0),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )

    def __repr__(self) -> str:
        return f"HttpClient(sockets={self._sockets})"

    def close(self) -> None:
        self._client.close()

    def scrub(self, err: ProviderError) -> ProviderError:
        """`err` with this client's credentials cut out of its detail.

        The classifier already redacts anything shaped like a key; this catches the rest
        (a proxy's token of any shape, echoed back in an error message).
        """
        detail = err.failure.detail
        for secret in self._secrets:
            detail = detail.replace(secret, "***")
        if detail == err.failure.detail:
            return err
        return ProviderError(dataclasses.replace(err.failure, detail=detail), partial=err.partial)

    def post_json(self, url: str, body: Mapping[str, object], *, timeout: float) -> object:
        """POST `body`, return the 2xx reply's JSON; every failure raises ProviderError."""
        raw = b"".join(self._chunks(url, encode(body), timeout=timeout, limit=MAX_BODY))
        return decode_json(raw, what="the reply")

    def stream_sse(
        self, url: str, body: Mapping[str, object], *, timeout: float
    ) -> Generator[SseEvent, None, None]:
        """POST `body`, yield the 2xx reply's events as each frame completes.

        Close the iterator (or exhaust it) to release the connection.
        """
        decoder = SseDecoder()
        for chunk in self._chunks(url, encode(body), timeout=timeout, limit=MAX_BODY):
            yield from decoder.feed(chunk)

    def stream_reply(
        self,
        url: str,
        body: Mapping[str, object],
        *,
        timeout: float,
        on_text: TextSink,
        parser: StreamParser,
    ) -> Reply:
        """Stream a reply, handing each text delta to `on_text` the moment it is parsed.

        A failure after text reached `on_text` carries that text as the error's `partial`.
        """
        sent: list[str] = []
        events = self.stream_sse(url, body, timeout=timeout)
        try:
            for event in events:
                delta = parser.feed(event)
                if delta:
                    sent.append(delta)
                    on_text(delta)
                if parser.finished:
                    break
            reply = parser.reply("".join(sent))
        except ProviderError as err:
            if not sent:
                raise
            raise ProviderError(err.failure, partial="".join(sent)) from None
        finally:
            events.close()
        streamed = "".join(sent)
        if len(reply.text) > len(streamed) and reply.text.startswith(streamed):
            # Text the stream never carried as a delta (a refusal's explanation): the user
            # reading the stream must see the same answer the Reply holds.
            on_text(reply.text[len(streamed) :])
        return reply

    # -- one exchange --------------------------------------------------------------------------

    def _chunks(self, url: str, payload: bytes, *, timeout: float, limit: int) -> Iterator[bytes]:
        """The body of a 2xx reply, chunk by chunk as it arrives, within the attempt's deadline."""
        clock = self.clock
        started = clock.monotonic()
        deadline = _Deadline(started + timeout, timeout)
        if timeout <= 0:
            raise self._timed_out(deadline)
        alarm: _Alarm | None = None
        response: httpx.Response | None = None
        outcome = "not sent"
        try:
            request = self._client.build_request(
                "POST",
                url,
                content=payload,
                timeout=self._timeouts(timeout),
                extensions={"trace": self._tracer(deadline)} if self._sockets else None,
            )
            if self._sockets:
                alarm = _watchdog.arm(timeout, functools.partial(self._expire, deadline))
            response = self._client.send(request, stream=True)
            outcome = str(response.status_code)
            if self._sockets:
                deadline.stream = response.extensions.get("network_stream", deadline.stream)
            if not response.is_success:
                from gateway import errors  # the classifier loads only when something failed

                body = self._error_body(response, deadline)
                raise ProviderError(
                    errors.classify_response(
                        response.status_code, response.headers, body, now=clock.wall()
                    )
                )
            size = 0
            for chunk in response.iter_bytes():
                if clock.monotonic() >= deadline.at:
                    raise self._timed_out(deadline)
                size += len(chunk)
                if size > limit:
                    raise malformed(f"the reply exceeded {limit} bytes")
                yield chunk
            if deadline.expired:  # the watchdog cut the body short and httpx saw a clean end
                raise self._timed_out(deadline)
        except ProviderError as err:
            outcome = f"{outcome} {err.failure.kind}"
            raise
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            if deadline.expired or clock.monotonic() >= deadline.at:
                outcome = f"{outcome} deadline"
                raise self._timed_out(deadline) from None
            outcome = f"{outcome} {type(exc).__name__}"
            from gateway import errors

            raise ProviderError(errors.classify_exception(exc)) from None
        finally:
            if alarm is not None:
                alarm.cancel()
            if response is not None:
                with contextlib.suppress(httpx.HTTPError, OSError):  # it is thrown away anyway
                    response.close()
            if log.isEnabledFor(logging.DEBUG):
                self._log(url, outcome, clock.monotonic() - started, response)

    def _timeouts(self, timeout: float) -> httpx.Timeout:
        # Each per-operation timeout is capped by the attempt's; the watchdog bounds their sum.
        return httpx.Timeout(
            connect=min(self._connect_timeout, timeout), read=timeout, write=timeout, pool=timeout
        )

    def _tracer(self, deadline: _Deadline) -> Callable[[str, dict[str, object]], None]:
        def trace(name: str, info: dict[str, object]) -> None:
            if name in _CONNECTED:
                deadline.stream = self._last_stream = info.get("return_value")

        return trace

    def _expire(self, deadline: _Deadline) -> None:
        deadline.expired = True
        # A reused keep-alive connection fires no connect event; with one connection per
        # client, the last one connected is the one in use.
        stream = deadline.stream if deadline.stream is not None else self._last_stream
        if stream is not None:
            _shutdown(stream)

    def _timed_out(self, deadline: _Deadline) -> ProviderError:
        return protocol_failure(
            ErrorKind.TIMEOUT, f"no complete reply within the attempt's {deadline.timeout:g} s"
        )

    def _error_body(self, response: httpx.Response, deadline: _Deadline) -> bytes:
        """At most MAX_ERROR_BODY bytes of an error reply: enough to classify, never a flood."""
        parts: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if size >= MAX_ERROR_BODY or self.clock.monotonic() >= deadline.at:
                    break
        except (httpx.HTTPError, OSError):
            pass  # a cut error body still has a status worth classifying
        return b"".join(parts)[:MAX_ERROR_BODY]

    def _log(self, url: str, outcome: str, elapsed: float, response: httpx.Response | None) -> None:
        request_id = ""
        if response is not None:
            for name in _REQUEST_ID_HEADERS:
                if name in response.headers:
                    request_id = f" {name}={response.headers[name]}"
                    break
        log.debug(
            "POST %s -> %s in %.3f s%s headers=%s",
            redact_url(url),
            outcome,
            elapsed,
            request_id,
            redact_headers(self._client.headers),
        )


class HttpProvider(ABC):
    """What every HTTP adapter shares: a JSON POST without `on_text`, an event stream with it.

    A subclass says where to send (the `url` it is built with, or `_url` when streaming goes
    elsewhere), what (`_body`) and how to read the answer (`_parse` for a whole reply,
    `_parser` for a stream); this class owns the client and the call.
    """

    def __init__(
        self,
        deployment: Deployment,
        *,
        url: str,
        headers: Mapping[str, str],
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`url` is the endpoint (named in the repr; an http:// one never loads the CA
        bundle); `headers` are the protocol's own, credentials among them, and win over a
        header of the same name in the deployment's configured ones."""
        self.deployment = deployment.name
        self._endpoint = url
        sent = {name.lower(): value for name, value in deployment.headers}
        sent.update(headers)
        self._http = HttpClient(
            sent, transport=transport, clock=clock, tls=url.startswith("https:")
        )

    def __repr__(self) -> str:
        # The deployment and where it goes, never a header: that is where the key is.
        return f"{type(self).__name__}(deployment={self.deployment!r}, url={self._endpoint!r})"

    def complete(
        self, request: Request, *, timeout: float, on_text: TextSink | None = None
    ) -> Reply:
        try:
            if on_text is None:
                data = self._http.post_json(
                    self._url(stream=False), self._body(request, stream=False), timeout=timeout
                )
                return self._parse(data)
            return self._http.stream_reply(
                self._url(stream=True),
                self._body(request, stream=True),
                timeout=timeout,
                on_text=on_text,
                parser=self._parser(),
            )
        except ProviderError as err:
            raise self._http.scrub(err) from None

    def close(self) -> None:
        self._http.close()

    def _now(self) -> float:
        return self._http.clock.wall()

    def _url(self, *, stream: bool) -> str:
        # One endpoint for both; a protocol with a separate streaming one overrides this.
        return self._endpoint

    @abstractmethod
    def _body(self, request: Request, *, stream: bool) -> dict[str, object]: ...

    @abstractmethod
    def _parse(self, data: object) -> Reply: ...

    @abstractmethod
    def _parser(self) -> StreamParser: ...
