"""API keys go into request headers and nowhere else: not into failures, replies, reprs or
any log record, even at DEBUG with httpx's and httpcore's own loggers listening, and even
when a server echoes the key back."""

from __future__ import annotations

import logging

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import ProviderError, ProviderKind, Request
from gateway.providers import build_provider
from gateway.secrets.key import Secret
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.provider_fixtures import replay

REQUEST = Request(system="Be brief.", question="Where is my invoice?", max_output_tokens=50)

# One key per adapter, in its real shape, plus a proxy token in no known shape at all.
KEYS = {
    ProviderKind.OPENAI: ("sk-proj-LEAKCHECK0123456789abcdef", "authorization"),
    ProviderKind.AZURE: ("0123456789abcdef0123456789abcdef", "api-key"),
    ProviderKind.ANTHROPIC: ("sk-ant-api03-LEAKCHECK-0123456789", "x-api-key"),
    ProviderKind.GEMINI: ("AIzaSyLEAKCHECK0123456789abcdefghij", "x-goog-api-key"),
}
SUCCESS = {
    ProviderKind.OPENAI: "openai/chat_completion",
    ProviderKind.AZURE: "azure/chat_completion",
    ProviderKind.ANTHROPIC: "anthropic/message",
    ProviderKind.GEMINI: "gemini/generate",
}
STREAM = {
    ProviderKind.OPENAI: "compatible/ollama_stream_truncated",
    ProviderKind.AZURE: "openai/stream_error",  # Azure streams the OpenAI protocol
    ProviderKind.ANTHROPIC: "anthropic/stream_no_stop",
    ProviderKind.GEMINI: "gemini/stream_error",
}


def deployment(kind: ProviderKind, base_url: str | None = None) -> Deployment:
    return Deployment(
        name=f"{kind.value}-dep",
        provider=kind,
        context_window=100_000,
        model="some-model",
        base_url=base_url
        or ("https://acme.openai.azure.com" if kind is ProviderKind.AZURE else None),
        api_version="2024-10-21" if kind is ProviderKind.AZURE else None,
    )


def echo_key(request: httpx.Request) -> httpx.Response:
    """A server that quotes every header it got back in a 401 (some proxies do)."""
    quoted = "; ".join(f"{k}={v}" for k, v in request.headers.items())
    return httpx.Response(401, json={"error": {"message": f"rejected request with {quoted}"}})


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records
    )


@pytest.mark.parametrize("kind", list(KEYS), ids=[k.value for k in KEYS])
def test_key_is_sent_in_its_header_and_appears_nowhere_else(
    kind: ProviderKind, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # root: httpx, httpcore and ours
    raw, header = KEYS[kind]
    key = Secret(raw)
    seen: list[str] = []

    # a good reply
    transport = replay(SUCCESS[kind])
    provider = build_provider(deployment(kind), key, transport=transport)
    reply = provider.complete(REQUEST, timeout=5)
    assert raw in transport.requests[0].headers[header]
    assert raw not in str(transport.requests[0].url)
    seen += [repr(reply), repr(provider)]

    # a broken stream, and a server that echoes the key back in its error
    for failing in (replay(STREAM[kind]), httpx.MockTransport(echo_key)):
        failing_provider = build_provider(deployment(kind), key, transport=failing)
        with pytest.raises(ProviderError) as caught:
            failing_provider.complete(REQUEST, timeout=5, on_text=lambda _: None)
        error = caught.value
        seen += [str(error), repr(error), repr(error.failure), error.failure.detail, error.partial]

    seen.append(everything_logged(caplog))
    assert caplog.records, "the DEBUG log should have recorded the calls"
    for text in seen:
        assert raw not in text


def test_a_proxy_token_of_no_known_shape_is_scrubbed_from_an_echoed_error() -> None:
    token = "corp-gateway-token-7f3a9c1e"
    d = Deployment(
        name="corp",
        provider=ProviderKind.OPENAI,
        context_window=8192,
        model="m",
        base_url="https://llm.corp.example/v1",
        headers=(("X-Gateway-Token", token),),
    )
    with pytest.raises(ProviderError) as caught:
        build_provider(d, None, transport=httpx.MockTransport(echo_key)).complete(
            REQUEST, timeout=5
        )
    assert token not in caught.value.failure.detail
    assert "rejected request" in caught.value.failure.detail


def test_no_key_leaks_over_real_sockets_on_timeout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    raw = "sk-proj-SOCKETLEAK0123456789abcdef"

    def handler(ex: Exchange) -> None:
        ex.start()
        ex.send(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n')
        ex.hang()

    with LoopbackServer(handler) as server:
        provider = build_provider(deployment(ProviderKind.OPENAI, server.url + "/v1"), Secret(raw))
        with pytest.raises(ProviderError) as caught:
            provider.complete(REQUEST, timeout=0.3, on_text=lambda _: None)
        assert server.exchanges[0].headers["authorization"] == f"Bearer {raw}"

    assert caught.value.partial == "Hi"
    for text in (str(caught.value), repr(caught.value.failure), everything_logged(caplog)):
        assert raw not in text
