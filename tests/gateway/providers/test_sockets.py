"""What only real sockets show: refused connections, silent and trickling servers, dropped
connections, and the whole-attempt deadline holding against all of them.

Every server here is tests/support/loopback.py on 127.0.0.1. Timeouts are ~0.5 s so the file stays
fast; the bound asserted is the attempt's timeout plus a small margin.
"""

from __future__ import annotations

import json
import time

import pytest

from gateway.config import Deployment
from gateway.model import ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.openai import OpenAIProvider
from gateway.secrets.key import Secret
from tests.support.loopback import Exchange, LoopbackServer, refused_url

REQUEST = Request(system="Be brief.", question="Where is my invoice?", max_output_tokens=50)
TIMEOUT = 0.5
MARGIN = 0.25  # well within the budget's 0.5 s margin (docs/decisions.md#the-budget)


def provider(base_url: str) -> OpenAIProvider:
    deployment = Deployment(
        name="local-llm",
        provider=ProviderKind.OPENAI,
        context_window=8192,
        model="llama3.2",
        base_url=base_url + "/v1",
    )
    return OpenAIProvider(deployment, Secret("sk-loopback-test-key-000000"))


def chunk(text: str | None = None, finish: str | None = None) -> str:
    delta = {} if text is None else {"content": text}
    body = {"model": "llama3.2", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


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


def timed(call: object) -> tuple[ProviderError, float]:
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        call()  # type: ignore[operator]
    return caught.value, time.monotonic() - started


def test_clean_streamed_answer_over_real_sockets() -> None:
    def handler(ex: Exchange) -> None:
        ex.start()
        for piece in ("Your invoice ", "is under ", "Billing."):
            ex.send(chunk(piece))
        ex.send(chunk(finish="stop"))
        ex.send("data: [DONE]\n\n")
        ex.end()

    texts: list[str] = []
    with LoopbackServer(handler) as server:
        reply = provider(server.url).complete(REQUEST, timeout=5, on_text=texts.append)
        request = server.exchanges[0]

    assert texts == ["Your invoice ", "is under ", "Billing."]
    assert reply.text == "Your invoice is under Billing."
    assert request.path == "/v1/chat/completions"
    assert request.json()["stream"] is True
    assert request.headers["authorization"] == "Bearer sk-loopback-test-key-000000"


def test_keep_alive_connection_is_reused_between_attempts() -> None:
    with LoopbackServer(lambda ex: ex.respond(200, COMPLETION)) as server:
        adapter = provider(server.url)
        first = adapter.complete(REQUEST, timeout=5)
        second = adapter.complete(REQUEST, timeout=5)
        connections = server.connections

    assert first.text == second.text == "Billing."
    assert connections == 1


def test_connection_refused_is_a_network_failure_with_a_readable_detail() -> None:
    error, elapsed = timed(lambda: provider(refused_url()).complete(REQUEST, timeout=5))
    assert error.failure.kind is ErrorKind.NETWORK
    assert "refused" in error.failure.detail
    assert elapsed < 1.0


def test_silent_server_times_out_at_the_attempts_timeout() -> None:
    with LoopbackServer(lambda ex: ex.hang()) as server:
        error, elapsed = timed(lambda: provider(server.url).complete(REQUEST, timeout=TIMEOUT))
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert TIMEOUT - 0.05 <= elapsed < TIMEOUT + MARGIN


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_trickling_body_is_cut_at_the_deadline(stream: bool) -> None:
    # A byte every 50 ms: no single read ever waits long enough for httpx's timeouts.
    def handler(ex: Exchange) -> None:
        if stream:
            ex.start()
        else:
            ex.send_raw(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            ex.send_raw(b"content-length: 100000\r\n\r\n")
        while ex.pause(0.05):
            ex.send(":\n") if stream else ex.send_raw(b" ")

    texts: list[str] = []
    with LoopbackServer(handler) as server:
        on_text = texts.append if stream else None
        error, elapsed = timed(
            lambda: provider(server.url).complete(REQUEST, timeout=TIMEOUT, on_text=on_text)
        )
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert elapsed < TIMEOUT + MARGIN


def test_read_blocked_at_the_deadline_is_ended_by_the_watchdog() -> None:
    # One token, then a byte every 0.45 s: each read returns before httpx's read timeout
    # (0.5 s), and the next chunk lands only at 0.9 s, so neither httpx nor a check between
    # chunks could end the attempt at 0.5 s. Only shutting the socket down does.
    def handler(ex: Exchange) -> None:
        ex.start()
        ex.send(chunk("Your invoice"))
        while ex.pause(0.45):
            ex.send(":\n")

    texts: list[str] = []
    with LoopbackServer(handler) as server:
        error, elapsed = timed(
            lambda: provider(server.url).complete(REQUEST, timeout=TIMEOUT, on_text=texts.append)
        )
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert error.partial == "Your invoice" == "".join(texts)
    assert elapsed < TIMEOUT + MARGIN


@pytest.mark.parametrize("reused", [False, True], ids=["new-connection", "kept-alive-connection"])
def test_headers_trickling_in_are_cut_at_the_deadline(reused: bool) -> None:
    # The status line, then one header line every 0.45 s: no response exists yet to close.
    def handler(ex: Exchange) -> None:
        if reused and len(ex_seen) == 0:
            ex_seen.append(ex)
            ex.respond(200, COMPLETION)
            return
        ex.send_raw(b"HTTP/1.1 200 OK\r\n")
        n = 0
        while ex.pause(0.45):
            n += 1
            ex.send_raw(f"x-wait-{n}: 1\r\n")

    ex_seen: list[Exchange] = []
    with LoopbackServer(handler) as server:
        adapter = provider(server.url)
        if reused:
            adapter.complete(REQUEST, timeout=5)
        error, elapsed = timed(lambda: adapter.complete(REQUEST, timeout=TIMEOUT))
        connections = server.connections
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert elapsed < TIMEOUT + MARGIN
    assert connections == 1


def test_connection_dropped_mid_stream_fails_with_the_tokens_already_shown() -> None:
    def handler(ex: Exchange) -> None:
        ex.start()
        ex.send(chunk("To reset your password, "))
        ex.send(chunk("open Settings"))
        ex.drop()

    texts: list[str] = []
    with LoopbackServer(handler) as server:
        error, _ = timed(
            lambda: provider(server.url).complete(REQUEST, timeout=5, on_text=texts.append)
        )
    assert error.failure.kind is ErrorKind.NETWORK
    assert error.partial == "To reset your password, open Settings" == "".join(texts)


def test_connection_dropped_mid_body_is_a_network_failure() -> None:
    def handler(ex: Exchange) -> None:
        ex.send_raw(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n"
        )
        ex.send_raw(b'{"model": "llama3.2", "choices": [')
        ex.drop()

    with LoopbackServer(handler) as server:
        error, _ = timed(lambda: provider(server.url).complete(REQUEST, timeout=5))
    assert error.failure.kind is ErrorKind.NETWORK


def test_error_status_over_real_sockets_is_classified() -> None:
    body = {"error": {"message": "model 'llama3.9' not found", "type": "not_found_error"}}
    with LoopbackServer(lambda ex: ex.respond(404, body)) as server:
        error, _ = timed(lambda: provider(server.url).complete(REQUEST, timeout=5))
    assert error.failure.kind is ErrorKind.MODEL_NOT_FOUND
    assert error.failure.status == 404
