"""The HTTP client every provider adapter shares, and THE one place foreign exceptions
become ours.

What lives here and nowhere else:

- one `httpx.Client` per adapter: explicit connect/read/write/pool timeouts, no redirects,
  no retries (httpx's transports retry nothing unless asked; we never ask: the engine is the
  only retry loop), at most one connection so the watchdog knows which socket is in use;
- each attempt held to its deadline (`deadline`): checked between chunks on the injected
  `Clock`, and the socket in use handed to the watchdog (a direct connection's transport
  keeps the stream it connected; through a proxy, httpcore's trace hook names it); the DNS
  lookup before a direct connection, which no socket timeout reaches, bounded by the
  connect timeout (`resolve`);
- status, headers and body of a non-2xx handed to `gateway.classify.errors.classify_response`, and
  every transport exception to `classify_exception`, raised as `ProviderError` (the
  classifier is imported on the first failure: a good answer never loads it);
- a streamed reply read frame by frame (`sse`), so a delta reaches `on_text` as soon as
  its frame is complete;
- the `--debug` HTTP log on `support_ask.http`, with credentials redacted
  (`gateway.secrets.shapes`);
- `HttpProvider`, the base class of the adapters.

What the protocol itself proves wrong is built in `failures`; JSON bodies are read
through `jsonshape`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING

import httpx

from gateway.clock import SystemClock
from gateway.model import ErrorKind, Headroom, ProviderError, Reply, Request, TextSink, Timer
from gateway.providers.deadline import Deadline, shutdown_stream
from gateway.providers.failures import malformed, timed_out
from gateway.providers.jsonshape import decode_json, encode
from gateway.record import replace
from gateway.secrets.redactor import Redactor
from gateway.secrets.shapes import redact_headers, redact_url, secret_header_values

if TYPE_CHECKING:
    import ssl

    from gateway.config import Deployment
    from gateway.providers.headroom import RateHeaders
    from gateway.providers.resolve import DirectTransport, Resolver
    from gateway.providers.sse import SseEvent, StreamParser
    from gateway.seams import Clock

log = logging.getLogger("support_ask.http")

CONNECT_TIMEOUT_S = 5.0  # what the official SDKs use; also capped by the attempt's own timeout
MAX_ERROR_BODY = 64 * 1024  # enough for any provider's error JSON; an HTML page is cut
MAX_BODY = 8 * 1024 * 1024  # a reply of a few hundred tokens is a few KiB; this is a runaway guard

# At most one connection, so the watchdog knows which socket is in use.
_LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1)
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "apim-request-id")
# An adapter posts to one or two endpoints: each is parsed once (httpx parses a str URL
# twice per request), and at most this many are kept.
_MAX_URLS = 8
# The request extension through which an injected transport learns the attempt's Deadline.
DEADLINE_EXTENSION = "support_ask.deadline"
# httpcore's trace events that hand over a freshly connected network stream: direct, and
# through an HTTP(S) or SOCKS proxy (only a proxy's connections are traced: a direct one's
# transport keeps its stream itself).
_CONNECTED = frozenset(
    f"{via}.{step}.complete"
    for via in ("connection", "proxy", "socks")
    for step in ("connect_tcp", "start_tls")
)


def _payload(body: Mapping[str, object] | bytes) -> bytes:
    return body if isinstance(body, bytes) else encode(body)


def _plain(headers: httpx.Headers) -> dict[str, str]:
    """A response's headers as a dict by lower-case name, a repeated one's values joined as
    httpx joins them: a rate-limit dialect looks up several names, and each lookup in
    httpx's headers scans them all (and raises inside for a name that is not there)."""
    out: dict[str, str] = {}
    for name, value in headers.multi_items():
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


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


def _direct_transport(
    context: ssl.SSLContext, resolve: Resolver | None, *, tls: bool
) -> DirectTransport | None:
    """The transport for the real network, or None to let httpx build its own.

    httpx mounts the environment's proxies only when it builds the transports itself, so
    with a proxy configured it keeps doing so (and the proxy resolves the provider's host).
    """
    from gateway.providers import resolve as resolving  # a MockTransport never needs it

    if resolving.proxied_by_environment():
        return None
    return resolving.DirectTransport(
        ssl_context=context,
        limits=_LIMITS,
        resolve=resolve if resolve is not None else resolving.system_resolver,
        tls=tls,
    )


class HttpClient:
    """One adapter's connection to its provider; `headers` are sent on every request.

    `transport` replaces the network (httpx.MockTransport in tests, the simulator); with
    the real network, a watchdog enforces each attempt's deadline on the socket itself,
    and a direct connection looks its host up through `resolve` (the system's resolver
    unless a test injects one) for at most the connect timeout (`gateway.providers.resolve`).
    `tls=False` (an http:// endpoint) skips loading the CA bundle. `rate_headers` reads the
    provider's rate-limit headers of each response into `seen` (None: it sends none).
    """

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        tls: bool = True,
        resolve: Resolver | None = None,
        rate_headers: RateHeaders | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._rate_headers = rate_headers
        self.seen: Headroom | None = None  # the last response's rate-limit headers
        self._sockets = transport is None
        self._connect_timeout = connect_timeout
        self._last_stream: object = None  # through a proxy: the last stream traced
        self._direct: DirectTransport | None = None  # None: a proxy's or a given transport
        self._urls: dict[str, httpx.URL] = {}
        self._redactor = Redactor(secret_header_values(headers))
        verify: ssl.SSLContext | bool = True  # unused by a transport given here
        if transport is None:
            verify = _ssl_context() if tls else _no_ca_context()
            transport = self._direct = _direct_transport(verify, resolve, tls=tls)
        self._client = httpx.Client(
            headers={"user-agent": "support-ask", "content-type": "application/json", **headers},
            transport=transport,
            verify=verify,
            follow_redirects=False,
            timeout=httpx.Timeout(connect=connect_timeout, read=60.0, write=60.0, pool=60.0),
            limits=_LIMITS,
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
        detail = self._redactor.scrub(err.failure.detail)
        if detail == err.failure.detail:
            return err
        return ProviderError(replace(err.failure, detail=detail), partial=err.partial)

    def post_json(
        self,
        url: str,
        body: Mapping[str, object] | bytes,
        *,
        timeout: float,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> object:
        """POST `body` (or the bytes of its JSON), return the 2xx reply's JSON; every failure
        raises ProviderError.

        `first_token` bounds the wait for the response headers (a whole reply's first
        sign of an answer), `stall` the silence between two chunks of its body.
        """
        deadline = Deadline(
            self.clock.monotonic(),
            timeout,
            first_token=first_token,
            stall=stall,
            first_is_headers=True,
        )
        raw = b"".join(self._chunks(url, _payload(body), deadline=deadline, limit=MAX_BODY))
        return decode_json(raw, what="the reply")

    def stream_sse(
        self, url: str, body: Mapping[str, object] | bytes, *, deadline: Deadline
    ) -> Generator[SseEvent, None, None]:
        """POST `body`, yield the 2xx reply's events as each frame completes.

        Close the iterator (or exhaust it) to release the connection.
        """
        from gateway.providers.sse import SseDecoder  # a whole (unstreamed) reply never needs it

        decoder = SseDecoder()
        for chunk in self._chunks(url, _payload(body), deadline=deadline, limit=MAX_BODY):
            yield from decoder.feed(chunk)

    def stream_reply(
        self,
        url: str,
        body: Mapping[str, object] | bytes,
        *,
        timeout: float,
        on_text: TextSink,
        parser: StreamParser,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply:
        """Stream a reply, handing each text delta to `on_text` the moment it is parsed.

        A failure after text reached `on_text` carries that text as the error's `partial`.
        `first_token` bounds the wait for the first text, `stall` the silence between two
        chunks after it. Whitespace before the first text is held back (and counts as no
        text), so a reply of only whitespace never reaches the customer.
        """
        deadline = Deadline(self.clock.monotonic(), timeout, first_token=first_token, stall=stall)
        sent: list[str] = []
        held = ""
        events = self.stream_sse(url, body, deadline=deadline)
        try:
            try:
                for event in events:
                    delta = parser.feed(event)
                    if delta and not sent:
                        held += delta
                        delta = ""
                        if held.strip():
                            deadline.arrived(self.clock.monotonic())
                            delta, held = held, ""
                    if delta:
                        sent.append(delta)
                        on_text(delta)
                    if parser.finished:
                        break
            except ProviderError as err:
                if err.failure.timer is not Timer.STALL:
                    raise
                # A server that keeps the stream open after its last chunk: an answer that
                # already ended (the parser holds its finish reason) is complete.
                try:
                    reply = parser.reply("".join(sent) + held)
                except ProviderError:
                    raise err from None
            else:
                reply = parser.reply("".join(sent) + held)
        except ProviderError as err:
            refused = parser.refused_so_far("".join(sent))
            if refused is None:
                if not sent:
                    raise
                raise ProviderError(err.failure, partial="".join(sent)) from None
            reply = refused  # however the stream ended after it, a refusal is the answer
        finally:
            events.close()
        streamed = "".join(sent)
        if (
            not reply.filtered
            and len(reply.text) > len(streamed)
            and reply.text.startswith(streamed)
        ):
            # Text the stream never carried as a delta (a model refusal's explanation): the
            # user reading the stream must see the same answer the Reply holds. A filter's
            # explanation is the provider's, not an answer: it never joins the stream.
            on_text(reply.text[len(streamed) :])
        return reply

    # -- one exchange --------------------------------------------------------------------------

    def _chunks(
        self, url: str, payload: bytes, *, deadline: Deadline, limit: int
    ) -> Iterator[bytes]:
        """The body of a 2xx reply, chunk by chunk as it arrives, within the attempt's deadlines."""
        clock = self.clock
        started = clock.monotonic()
        if deadline.timeout <= 0:
            raise self._timed_out(deadline, Timer.ATTEMPT, silent=True)
        response: httpx.Response | None = None
        outcome = "not sent"
        self.seen = None
        try:
            request = self._client.build_request(
                "POST", self._url(url), content=payload, extensions=self._extensions(deadline)
            )
            if self._sockets:
                deadline.watch(functools.partial(self._expire, deadline))
            response = self._client.send(request, stream=True)
            outcome = str(response.status_code)
            if self._rate_headers is not None:
                self.seen = self._rate_headers(_plain(response.headers), clock.wall())
            if self._sockets:
                deadline.stream = response.extensions.get("network_stream", deadline.stream)
            if not response.is_success:
                from gateway.classify import (
                    errors,  # the classifier loads only when something failed
                )

                body = self._error_body(response, deadline)
                failure = errors.classify_response(
                    response.status_code, response.headers, body, now=clock.wall()
                )
                if self.seen is not None:
                    failure = replace(failure, headroom=self.seen)
                raise ProviderError(failure)
            now = clock.monotonic()
            late = deadline.passed(now)
            if late is not None:
                raise self._timed_out(deadline, late)
            if deadline.first_is_headers:
                deadline.arrived(now)
            size = 0
            for chunk in response.iter_bytes():
                now = clock.monotonic()
                late = deadline.passed(now)
                if late is not None:
                    raise self._timed_out(deadline, late)
                deadline.tick(now)
                size += len(chunk)
                if size > limit:
                    raise malformed(f"the reply exceeded {limit} bytes")
                yield chunk
            if deadline.expired:  # the watchdog cut the body short and httpx saw a clean end
                raise self._timed_out(deadline, deadline.expired)
        except ProviderError as err:
            outcome = f"{outcome} {err.failure.kind}"
            raise
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            late = deadline.expired or deadline.passed(clock.monotonic())
            if late is not None and not self._names_why(exc):
                outcome = f"{outcome} deadline"
                raise self._timed_out(deadline, late, silent=response is None) from None
            outcome = f"{outcome} {type(exc).__name__}"
            from gateway.classify import errors

            failure = errors.classify_exception(exc)
            if response is None and failure.kind is ErrorKind.TIMEOUT:
                failure = replace(failure, silent=True)
            raise ProviderError(failure) from None
        finally:
            deadline.close()
            if response is not None:
                with contextlib.suppress(httpx.HTTPError, OSError):  # it is thrown away anyway
                    response.close()
            if log.isEnabledFor(logging.DEBUG):
                self._log(url, outcome, clock.monotonic() - started, response)

    def _url(self, url: str) -> httpx.URL:
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = httpx.URL(url)
            if len(self._urls) < _MAX_URLS:
                self._urls[url] = parsed
        return parsed

    def _extensions(self, deadline: Deadline) -> dict[str, object]:
        # Each per-operation timeout is capped by the attempt's; the watchdog bounds their
        # sum. Given as httpx's "timeout" request extension (what it makes of a Timeout
        # anyway), so no Timeout is built and copied per request.
        timeout = deadline.timeout
        connect = min(self._connect_timeout, timeout)
        limits = {"connect": connect, "read": timeout, "write": timeout, "pool": timeout}
        if not self._sockets:
            # An injected transport (the simulator, a test's fake server) runs on the
            # injected clock, where no watchdog can cut a read short: it learns when the
            # client would give up (`Deadline.give_up_at`) and stops waiting there, as a
            # cut socket would.
            return {"timeout": limits, DEADLINE_EXTENSION: deadline}
        if self._direct is None:  # through a proxy: its connections are seen by tracing
            return {"timeout": limits, "trace": self._tracer(deadline)}
        return {"timeout": limits}

    def _tracer(self, deadline: Deadline) -> Callable[[str, dict[str, object]], None]:
        def trace(name: str, info: dict[str, object]) -> None:
            if name in _CONNECTED:
                deadline.stream = self._last_stream = info.get("return_value")

        return trace

    def _expire(self, deadline: Deadline) -> None:
        # Until the response names its stream, with one connection per client the last
        # one connected is the one in use (a reused keep-alive connection connects nothing).
        stream = deadline.stream
        if stream is None:
            stream = self._last_stream if self._direct is None else self._direct.connected
        if stream is not None:
            shutdown_stream(stream)

    def _names_why(self, exc: Exception) -> bool:
        # At the deadline a failure is usually the watchdog's doing (a socket shut down
        # reads as a lost connection), so the deadline's message replaces it. A DNS lookup
        # that ran out of time had no socket to shut down, and its own detail says more.
        if not self._sockets:
            return False
        from gateway.providers.resolve import DnsTimeout  # loaded with the real network

        return isinstance(exc, DnsTimeout)

    def _timed_out(
        self, deadline: Deadline, timer: Timer, *, silent: bool = False
    ) -> ProviderError:
        from gateway.units import seconds

        if timer is Timer.FIRST_TOKEN:
            what = "response" if deadline.first_is_headers else "text"
            detail = f"no {what} within first_token_timeout ({deadline.first_token:g} s)"
        elif timer is Timer.STALL:
            detail = f"the reply stalled: nothing for stall_timeout ({deadline.stall:g} s)"
        elif silent:
            detail = f"no response within the attempt's {seconds(deadline.timeout)} s"
        else:
            detail = f"no complete reply within the attempt's {seconds(deadline.timeout)} s"
        return timed_out(detail, timer, silent=silent)

    def _error_body(self, response: httpx.Response, deadline: Deadline) -> bytes:
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
    `_parser` for a stream), and how its rate-limit headers read (`_headroom`); this class
    owns the client and the call.
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
        self._last: tuple[Request, bool, bytes] | None = None  # the last body sent, encoded
        self._http = HttpClient(
            sent,
            transport=transport,
            clock=clock,
            tls=url.startswith("https:"),
            rate_headers=self._headroom,
        )

    def __repr__(self) -> str:
        # The deployment and where it goes, never a header: that is where the key is.
        return f"{type(self).__name__}(deployment={self.deployment!r}, url={self._endpoint!r})"

    def complete(
        self,
        request: Request,
        *,
        timeout: float,
        on_text: TextSink | None = None,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply:
        try:
            if on_text is None:
                data = self._http.post_json(
                    self._url(stream=False),
                    self._payload(request, stream=False),
                    timeout=timeout,
                    first_token=first_token,
                    stall=stall,
                )
                return self._seen(self._parse(data))
            return self._seen(
                self._http.stream_reply(
                    self._url(stream=True),
                    self._payload(request, stream=True),
                    timeout=timeout,
                    on_text=on_text,
                    parser=self._parser(),
                    first_token=first_token,
                    stall=stall,
                )
            )
        except ProviderError as err:
            raise self._http.scrub(err) from None

    def _payload(self, request: Request, *, stream: bool) -> bytes:
        """The JSON `_body` makes of `request`, encoded once for every attempt that sends it:
        a question's retries on this adapter send the same request (records are frozen), and
        escaping its prompt was most of the adapter's own cost (bench/RESULTS.md)."""
        last = self._last
        if last is not None and last[0] is request and last[1] is stream:
            return last[2]
        payload = _payload(self._body(request, stream=stream))
        self._last = (request, stream, payload)
        return payload

    def _headroom(self, headers: Mapping[str, str], now: float) -> Headroom | None:
        """What a response's rate-limit headers say is left (`gateway.providers.headroom`):
        a provider that sends them reads them in its own dialect."""
        return None

    def _seen(self, reply: Reply) -> Reply:
        seen = self._http.seen
        return reply if seen is None else replace(reply, headroom=seen)

    def close(self) -> None:
        self._http.close()

    def _now(self) -> float:
        return self._http.clock.wall()

    def _url(self, *, stream: bool) -> str:
        # One endpoint for both; a protocol with a separate streaming one overrides this.
        return self._endpoint

    @abstractmethod
    def _body(self, request: Request, *, stream: bool) -> Mapping[str, object] | bytes:
        """What to send: an object to encode, or its JSON bytes already written."""

    @abstractmethod
    def _parse(self, data: object) -> Reply: ...

    @abstractmethod
    def _parser(self) -> StreamParser: ...
