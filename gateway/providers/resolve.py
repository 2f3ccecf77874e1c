"""The direct connection to a provider, with its DNS lookup held to the connect timeout.

httpcore resolves the host inside `socket.create_connection`, on the calling thread, where
no timeout reaches: a resolver that never answers would hold the attempt, and so the whole
question, past its budget, and the deadline's watchdog has no socket yet to shut down.
Here the lookup runs on a daemon thread (a lookup stuck for good never holds up exit) and
the attempt waits for it at most the connect timeout, which the client has already capped
by the attempt's own timeout. The connection then goes to the address found, while
httpcore still does TLS against the original host name (SNI and certificate check) and
httpx still sends it as `Host`: only the TCP connect sees the address.

httpx 0.28 takes no network backend, so `DirectTransport` is the small adapter from httpx's
transport interface to an httpcore connection pool (both public APIs), httpcore's
exceptions translated to httpx's in one table. Its backend also keeps the stream it last
connected (`DirectTransport.connected`: after TLS, the encrypted one, whose socket is the
one reads block on), so the deadline's watchdog finds the socket in use without a trace
hook on every request. It replaces only httpx's direct path: when
the environment names a proxy (`proxied_by_environment`), httpx builds its own transports,
so HTTP(S)_PROXY, ALL_PROXY and NO_PROXY keep working exactly as httpx reads them; then
the proxy resolves the provider's host, and only the proxy's own name, or a host NO_PROXY
sends direct, is looked up without this bound.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import httpcore
import httpx

from gateway.clock import start_daemon

if TYPE_CHECKING:
    import ssl

Resolver = Callable[[str, int], Sequence[str]]
"""The addresses (as IP literals, best first) to connect to for host and port."""


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's answer, in its order of preference (as create_connection)."""
    addresses: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


class DnsTimeout(httpx.ConnectTimeout):
    """No answer from the resolver within the connect timeout.

    Raised in httpx's terms (httpcore passes a backend's exceptions through untouched) so
    the client can tell it from the deadline's own expiry: its detail names the host.
    """


def lookup(resolve: Resolver, host: str, port: int, timeout: float | None) -> Sequence[str]:
    """`resolve(host, port)`, waited for at most `timeout` seconds.

    A literal address needs no lookup, and so no thread.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [host]
    answer: list[Sequence[str] | BaseException] = []
    done = threading.Event()

    def ask() -> None:
        try:
            answer.append(resolve(host, port))
        except BaseException as exc:  # handed to the waiting attempt, which decides
            answer.append(exc)
        finally:
            done.set()

    start_daemon(ask, "support-ask-dns")
    if not done.wait(timeout) and timeout is not None:  # the thread is left to finish alone
        from gateway.units import seconds

        raise DnsTimeout(f"DNS lookup for {host} took longer than {seconds(timeout)} s")
    result = answer[0]
    if isinstance(result, OSError):  # socket.gaierror: what SyncBackend makes of it too
        raise httpcore.ConnectError(str(result)) from result
    if isinstance(result, BaseException):
        raise result
    if not result:
        raise httpcore.ConnectError(f"DNS lookup for {host} found no address")
    return result


class _Upgrading(httpcore.NetworkStream):
    """A connected stream that TLS will replace: the stream `start_tls` returns is recorded
    as the connection's and handed back bare, so reads and writes after the handshake
    pass through nothing of ours."""

    __slots__ = ("_backend", "_inner")

    def __init__(self, inner: httpcore.NetworkStream, backend: ResolvingBackend) -> None:
        self._inner = inner
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, timeout)
        self._backend.connected = tls
        return tls

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class ResolvingBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, connected to the address `resolve` found in time.

    `connected` is the stream it last handed over (with `tls`, the one TLS upgraded it to):
    with at most one connection per client, the one any read in flight is blocked on.
    """

    def __init__(
        self,
        resolve: Resolver = system_resolver,
        inner: httpcore.NetworkBackend | None = None,
        *,
        tls: bool = True,
    ) -> None:
        self._resolve = resolve
        self._inner = inner if inner is not None else httpcore.SyncBackend()
        self._tls = tls
        self.connected: httpcore.NetworkStream | None = None

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        started = time.monotonic()
        addresses = lookup(self._resolve, host, port, timeout)
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        # Like create_connection: each address in turn (an IPv6 one may be unreachable
        # where the IPv4 one works), the last failure reported; but within one budget.
        for address in addresses:
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            try:
                stream = self._inner.connect_tcp(
                    address,
                    port,
                    timeout=left,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            self.connected = stream
            return _Upgrading(stream, self) if self._tls else stream
        if failure is not None:
            raise failure
        raise httpcore.ConnectTimeout(f"the DNS lookup for {host} left no time to connect")

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        return self._inner.connect_unix_socket(path, timeout, socket_options)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# httpcore's exceptions and the httpx ones the client (and gateway.classify.errors) understand;
# checked in order, so a subclass comes before its base.
_TRANSLATED: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
)
_FOREIGN = tuple(theirs for theirs, _ in _TRANSLATED)


def _ours(exc: Exception) -> httpx.TransportError:
    """httpx's exception for httpcore's `exc` (raised `from` it by the caller). A plain
    `except` at each of the three places, not a context manager: this is every request's
    path, and a generator-based one costs more than the request's own bookkeeping."""
    ours = next(target for source, target in _TRANSLATED if isinstance(exc, source))
    return ours(str(exc))


class _Body(httpx.SyncByteStream):
    """httpcore's response body as httpx reads it, failures translated."""

    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except _FOREIGN as exc:
            raise _ours(exc) from exc

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            try:
                close()
            except _FOREIGN as exc:
                raise _ours(exc) from exc


class DirectTransport(httpx.BaseTransport):
    """What httpx's default transport does for a direct connection, DNS lookup bounded."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext,
        limits: httpx.Limits,
        resolve: Resolver = system_resolver,
        tls: bool = True,
    ) -> None:
        """`tls`: the provider's URL is https (its connections are upgraded)."""
        self._backend = ResolvingBackend(resolve, tls=tls)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=self._backend,
        )

    @property
    def connected(self) -> httpcore.NetworkStream | None:
        """The stream last connected (after TLS, the encrypted one); None before any."""
        return self._backend.connected

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(request.stream, httpx.SyncByteStream):
            raise TypeError("DirectTransport serves a synchronous httpx.Client only")
        url = request.url
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            reply = self._pool.handle_request(sent)
        except _FOREIGN as exc:
            raise _ours(exc) from exc
        if not isinstance(reply.stream, Iterable):
            raise TypeError("httpcore's synchronous pool returned an asynchronous body")
        return httpx.Response(
            status_code=reply.status,
            headers=reply.headers,
            stream=_Body(reply.stream),
            extensions=reply.extensions,
        )

    def close(self) -> None:
        try:
            self._pool.close()
        except _FOREIGN as exc:
            raise _ours(exc) from exc


def proxied_by_environment() -> bool:
    """Whether httpx, left to build its own transports, would mount a proxy.

    It reads the same `urllib.request.getproxies()` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY,
    and on macOS and Windows the system settings); NO_PROXY=* turns every proxy off.
    """
    found = urllib.request.getproxies()
    if "*" in (host.strip() for host in found.get("no", "").split(",")):
        return False
    return any(found.get(scheme) for scheme in ("http", "https", "all"))
