"""The DNS lookup before a direct connection is held to the attempt's time, like the rest.

A resolver that never answers must not stretch an attempt (and so the question) past its
timeout; a resolver that answers must not change what goes over the wire: the connection
goes to the address found, the request still names the host, and TLS still checks it.
The resolver is injected (`HttpClient(resolve=...)`); every server is on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import httpcore
import pytest

from gateway.config import Deployment
from gateway.model import ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.http import HttpClient
from gateway.providers.openai import OpenAIProvider
from gateway.providers.resolve import ResolvingBackend, proxied_by_environment
from gateway.secrets.key import Secret
from tests.support.loopback import LoopbackServer

TIMEOUT = 0.5
MARGIN = 0.5  # the budget's margin (docs/decisions.md#the-budget); the bound holds well within it
HOST = "api.example.test"  # .test never resolves for real: only the injected resolver knows it
BODY = {"model": "m", "messages": [{"role": "user", "content": "Where is my invoice?"}]}
REQUEST = Request(system="Be brief.", question="Where is my invoice?", max_output_tokens=50)
COMPLETION = {
    "model": "llama3.2",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Billing."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 2},
}
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class Resolver:
    """A resolver that knows HOST (as `addresses`), records every question, and can hang."""

    def __init__(self, *addresses: str, hang: bool = False) -> None:
        self.addresses = list(addresses)
        self.hang = hang
        self.asked: list[tuple[str, int]] = []
        self.released = threading.Event()

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append((host, port))
        if self.hang:
            self.released.wait(10)  # released when the test ends: no thread outlives it long
        if host != HOST:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.addresses


@pytest.fixture
def hanging() -> Iterator[Resolver]:
    resolver = Resolver("127.0.0.1", hang=True)
    yield resolver
    resolver.released.set()


def client(
    resolve: Callable[[str, int], Sequence[str]], *, tls: bool, connect_timeout: float = 5.0
) -> HttpClient:
    return HttpClient(
        {"authorization": "Bearer sk-dns-test-key-000000"},
        resolve=resolve,
        tls=tls,
        connect_timeout=connect_timeout,
    )


def timed(call: Callable[[], object]) -> tuple[ProviderError, float]:
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value, time.monotonic() - started


def adapter(base_url: str) -> OpenAIProvider:
    deployment = Deployment(
        name="local-llm",
        provider=ProviderKind.OPENAI,
        context_window=8192,
        model="llama3.2",
        base_url=base_url + "/v1",
    )
    return OpenAIProvider(deployment, Secret("sk-loopback-test-key-000000"))


# --- a resolver that does not answer ------------------------------------------------------------


def test_hanging_lookup_ends_the_attempt_at_its_timeout(hanging: Resolver) -> None:
    http = client(hanging, tls=False)
    error, elapsed = timed(
        lambda: http.post_json(f"http://{HOST}/v1/chat/completions", BODY, timeout=TIMEOUT)
    )
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert f"DNS lookup for {HOST} took longer than 0.5 s" in error.failure.detail
    assert TIMEOUT - 0.05 <= elapsed < TIMEOUT + MARGIN
    assert hanging.asked == [(HOST, 80)]


def test_hanging_lookup_is_cut_at_the_connect_timeout_when_that_is_shorter(
    hanging: Resolver,
) -> None:
    http = client(hanging, tls=True, connect_timeout=0.3)
    error, elapsed = timed(
        lambda: http.post_json(f"https://{HOST}/v1/chat/completions", BODY, timeout=5)
    )
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert f"DNS lookup for {HOST} took longer than 0.3 s" in error.failure.detail
    assert 0.25 <= elapsed < 0.3 + MARGIN


@pytest.mark.slow
def test_a_lookup_stuck_for_good_does_not_keep_the_process_alive() -> None:
    # The CLI answers, then exits: a resolver thread still waiting must not hold it.
    script = """
import threading
from gateway.model import ProviderError
from gateway.providers.http import HttpClient
stuck = threading.Event()
http = HttpClient({}, tls=False, resolve=lambda host, port: stuck.wait())
try:
    http.post_json("http://api.example.test/v1", {}, timeout=0.2)
except ProviderError as err:
    print(err.failure.kind)
"""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timeout"
    assert time.monotonic() - started < 5


# --- a resolver that answers ---------------------------------------------------------------------


def test_unknown_host_is_a_network_failure_naming_dns() -> None:
    http = client(Resolver(), tls=False)
    error, elapsed = timed(
        lambda: http.post_json("http://nowhere.example.test/v1", BODY, timeout=TIMEOUT)
    )
    assert error.failure.kind is ErrorKind.NETWORK
    assert error.failure.detail.startswith("DNS lookup failed")
    assert elapsed < TIMEOUT


def test_the_connection_goes_to_the_address_found_and_the_request_names_the_host() -> None:
    resolver = Resolver("127.0.0.1")
    with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        http = client(resolver, tls=False)
        first = http.post_json(f"http://{HOST}:{port}/v1/chat/completions", BODY, timeout=5)
        second = http.post_json(f"http://{HOST}:{port}/v1/chat/completions", BODY, timeout=5)
        seen = [(ex.headers["host"], ex.path) for ex in server.exchanges]
        connections = server.connections

    assert first == second == COMPLETION
    assert seen == [(f"{HOST}:{port}", "/v1/chat/completions")] * 2
    assert resolver.asked == [(HOST, port)]  # the kept-alive connection asks no more
    assert connections == 1


@pytest.mark.skipif(sys.platform != "linux", reason="127.0.0.2 is a loopback address on Linux")
def test_an_address_that_refuses_is_passed_over_for_the_next() -> None:
    resolver = Resolver("127.0.0.2", "127.0.0.1")  # the server listens on 127.0.0.1 only
    with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reply = client(resolver, tls=False).post_json(f"http://{HOST}:{port}/v1", BODY, timeout=5)
    assert reply == COMPLETION


def test_tls_still_names_the_host_not_the_address() -> None:
    # A TLS server with no certificate: it reads the ClientHello's server name, then fails
    # the handshake, which the client must report as a TLS failure.
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        tls = context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        with conn, tls, contextlib.suppress(ssl.SSLError, OSError):  # it is meant to fail
            tls.do_handshake()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        http = client(Resolver("127.0.0.1"), tls=True)
        error, _ = timed(lambda: http.post_json(f"https://{HOST}:{port}/v1", BODY, timeout=5))
    finally:
        server.join(2)
        listener.close()
    assert names == [HOST]
    assert error.failure.kind is ErrorKind.NETWORK
    assert "TLS" in error.failure.detail


class _Stream(httpcore.NetworkStream):
    """A network stream that only says what it is; TLS turns it into another one."""

    def __init__(self, name: str) -> None:
        self.name = name

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _Stream(f"tls over {self.name}")


class _Connects(httpcore.NetworkBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: object = None,
    ) -> httpcore.NetworkStream:
        return _Stream(f"tcp to {host}")


def test_the_connection_in_use_is_the_tls_stream_once_upgraded() -> None:
    # After the handshake every read goes through the TLS stream's socket: a deadline's
    # watchdog must shut that one down, not the TCP stream it was made from.
    backend = ResolvingBackend(Resolver("127.0.0.1"), _Connects(), tls=True)
    stream = backend.connect_tcp(HOST, 443, timeout=1.0)
    assert isinstance(backend.connected, _Stream)
    assert backend.connected.name == "tcp to 127.0.0.1"
    upgraded = stream.start_tls(ssl.create_default_context(), server_hostname=HOST)
    assert upgraded is backend.connected
    assert isinstance(upgraded, _Stream) and upgraded.name == "tls over tcp to 127.0.0.1"


def test_a_literal_address_needs_no_lookup() -> None:
    resolver = Resolver("203.0.113.9", hang=True)  # would hang the test if it were asked
    try:
        with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as server:
            reply = client(resolver, tls=False).post_json(server.url + "/v1", BODY, timeout=5)
    finally:
        resolver.released.set()
    assert reply == COMPLETION
    assert resolver.asked == []


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_adapter_over_loopback_by_address_and_by_name(name: str) -> None:
    # The system's own resolver: "localhost" comes from the hosts file, no network.
    with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reply = adapter(f"http://{name}:{port}").complete(REQUEST, timeout=5)
        request = server.exchanges[0]
    assert reply.text == "Billing."
    assert request.headers["host"] == f"{name}:{port}"


# --- proxies from the environment ----------------------------------------------------------------


def test_a_proxy_from_the_environment_is_used_and_resolves_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolver = Resolver("127.0.0.1")
    with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        reply = client(resolver, tls=False).post_json(f"http://{HOST}/v1/x", BODY, timeout=5)
        request = proxy.exchanges[0]
    assert reply == COMPLETION
    assert request.path == f"http://{HOST}/v1/x"  # absolute form: the proxy looks it up
    assert json.loads(request.body) == BODY
    assert resolver.asked == []


@pytest.mark.parametrize(
    ("env", "proxied"),
    [
        ({}, False),
        ({"HTTPS_PROXY": "http://proxy.corp:3128"}, True),
        ({"ALL_PROXY": "socks5://proxy.corp:1080"}, True),
        ({"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "localhost, *"}, False),
        ({"NO_PROXY": "internal.corp"}, False),
    ],
    ids=["none", "https", "all", "no-proxy-star", "no-proxy-alone"],
)
def test_which_environments_leave_the_connection_to_httpx(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], proxied: bool
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert proxied_by_environment() is proxied


def test_the_lookup_thread_never_takes_a_stop_signal() -> None:
    """A Ctrl-C the kernel gave the lookup's thread would wait for its timeout."""
    import signal

    from gateway.clock import STOPS
    from gateway.providers.resolve import lookup

    seen: list[set[int]] = []

    def resolver(host: str, port: int) -> list[str]:
        seen.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        return ["127.0.0.1"]

    assert lookup(resolver, "api.example.test", 443, 10) == ["127.0.0.1"]
    assert seen[0] >= STOPS
