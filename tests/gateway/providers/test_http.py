"""The shared HTTP layer: event-stream decoding, the attempt deadline on the injected clock,
bounded bodies, and the redacted --debug log."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.model import Decision, ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.http import MAX_BODY, MAX_ERROR_BODY, HttpClient
from gateway.providers.openai import OpenAIProvider
from gateway.providers.sse import SseDecoder, SseEvent
from gateway.secrets.key import Secret
from gateway.secrets.shapes import PLACEHOLDER
from tests.support.provider_fixtures import replay

REQUEST = Request(system="Be brief.", question="Where is my invoice?", max_output_tokens=50)


def decode(*chunks: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


# --- server-sent events -----------------------------------------------------------------------


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_each_line_ending_delimits_events(newline: bytes) -> None:
    raw = (
        b"data: one"
        + newline
        + newline
        + b"event: ping"
        + newline
        + b"data: {}"
        + newline
        + newline
    )
    assert decode(raw) == [SseEvent("message", "one"), SseEvent("ping", "{}")]


def test_crlf_split_across_two_reads_is_one_line_ending() -> None:
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [
        SseEvent("message", "a"),
        SseEvent("message", "b"),
    ]


def test_comment_lines_and_unknown_fields_are_skipped() -> None:
    raw = b": OPENROUTER PROCESSING\n\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n"
    assert decode(raw) == [SseEvent("message", "x")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert decode(b'data: {"a":\ndata:  1}\n\n') == [SseEvent("message", '{"a":\n 1}')]


def test_only_one_space_after_the_colon_is_dropped_and_colons_in_data_stay() -> None:
    assert decode(b"data:x:y\n\ndata:  z\n\n") == [
        SseEvent("message", "x:y"),
        SseEvent("message", " z"),
    ]


def test_utf8_character_split_between_reads_survives() -> None:
    raw = "data: café ☕\n\n".encode()
    cut = raw.index("☕".encode()) + 1
    assert decode(raw[:cut], raw[cut:]) == [SseEvent("message", "café ☕")]


def test_event_without_its_blank_line_at_eof_is_not_dispatched() -> None:
    assert decode(b"data: complete\n\ndata: cut off") == [SseEvent("message", "complete")]


def test_byte_order_mark_at_the_start_is_ignored() -> None:
    assert decode("\ufeffdata: x\n\n".encode()) == [SseEvent("message", "x")]


STREAM = (
    '\ufeff: keep-alive\r\ndata: {"a":\r\ndata:  1}\r\n\r\nevent: ping\rdata: café ☕\r\r'
    "data: last\n\n"
).encode()
WHOLE = [
    SseEvent("message", '{"a":\n 1}'),
    SseEvent("ping", "café ☕"),
    SseEvent("message", "last"),
]


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_a_stream_cut_in_two_anywhere_gives_the_same_events(cut: int) -> None:
    assert decode(STREAM) == WHOLE
    assert decode(STREAM[:cut], STREAM[cut:]) == WHOLE


def test_a_stream_fed_byte_by_byte_gives_the_same_events() -> None:
    assert decode(*(STREAM[i : i + 1] for i in range(len(STREAM)))) == WHOLE


def test_decoding_scans_each_character_once_however_the_stream_is_chunked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The work is counted, not timed: every character the decoder searches for line
    # endings. Re-scanning an unfinished line at each chunk made this quadratic: a 2 MiB
    # event in 4 KiB chunks was scanned 512 times over.
    from gateway.providers import sse

    scanned = 0
    real = sse._NEWLINE

    class Counting:
        def split(self, text: str) -> list[str]:
            nonlocal scanned
            scanned += len(text)
            return real.split(text)

    monkeypatch.setattr(sse, "_NEWLINE", Counting())
    payload = "x" * (2 * 1024 * 1024)
    raw = f"data: {payload}\n\n".encode()
    chunks = [raw[i : i + 4096] for i in range(0, len(raw), 4096)]
    assert decode(*chunks) == [SseEvent("message", payload)]
    assert scanned <= len(raw)


# --- the attempt deadline on the injected clock ------------------------------------------------


def adapter(
    transport: httpx.BaseTransport,
    clock: VirtualClock | None = None,
    key: str = "sk-test-key-123456789",
) -> OpenAIProvider:
    deployment = Deployment(
        name="primary", provider=ProviderKind.OPENAI, context_window=8192, model="gpt-4o-mini"
    )
    return OpenAIProvider(deployment, Secret(key), transport=transport, clock=clock)


class SlowFrames(httpx.SyncByteStream):
    """A stream whose every frame takes `step` seconds of virtual time to arrive."""

    def __init__(self, clock: VirtualClock, frames: list[bytes], step: float) -> None:
        self.clock, self.frames, self.step = clock, frames, step

    def __iter__(self) -> Iterator[bytes]:
        for frame in self.frames:
            self.clock.advance(self.step)
            yield frame


def frame(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


def test_stream_past_the_deadline_is_a_timeout_with_the_text_so_far() -> None:
    clock = VirtualClock()
    frames = [frame(f"w{n} ") for n in range(10)]
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, stream=SlowFrames(clock, frames, 1.0))
    )
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        adapter(transport, clock).complete(REQUEST, timeout=3.5, on_text=texts.append)

    assert caught.value.failure.kind is ErrorKind.TIMEOUT
    assert caught.value.failure.decision is Decision.RETRY
    assert texts == ["w0 ", "w1 ", "w2 "]  # frames at 1, 2, 3 s; the one at 4 s is past 3.5
    assert caught.value.partial == "w0 w1 w2 "
    assert "3.5 s" in caught.value.failure.detail


def test_whole_reply_past_the_deadline_is_a_timeout() -> None:
    clock = VirtualClock()
    frames = [b'{"choices": [{"index": 0, "message": {"content": "', b"x" * 10, b'"}}]}']
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, stream=SlowFrames(clock, frames, 2.0))
    )
    with pytest.raises(ProviderError) as caught:
        adapter(transport, clock).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.TIMEOUT


def test_no_time_left_fails_at_once_without_sending() -> None:
    transport = replay()  # any request would fail the test
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=0)
    assert caught.value.failure.kind is ErrorKind.TIMEOUT
    assert transport.requests == []


# --- bounded bodies -----------------------------------------------------------------------------


class Endless(httpx.SyncByteStream):
    """A body that goes on far past any bound (stopping only so a bug cannot hang the test)."""

    def __init__(self, piece: bytes) -> None:
        self.piece = piece
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        while self.sent < 4 * MAX_BODY:
            self.sent += len(self.piece)
            yield self.piece


def test_error_body_is_read_only_as_far_as_classification_needs() -> None:
    body = Endless(b"<html>" + b"x" * 4090)
    transport = httpx.MockTransport(lambda r: httpx.Response(502, stream=body))
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.SERVER
    assert body.sent <= MAX_ERROR_BODY + 4096


def test_runaway_success_body_is_a_failure_not_a_memory_blowup() -> None:
    body = Endless(b" " * 65536)
    transport = httpx.MockTransport(lambda r: httpx.Response(200, stream=body))
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.SERVER
    assert "exceeded" in caught.value.failure.detail
    assert body.sent <= MAX_BODY + 65536


# --- the --debug HTTP log ---------------------------------------------------------------------


def test_debug_log_names_method_url_status_and_elapsed_with_credentials_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="support_ask.http")
    adapter(replay("openai/chat_completion"), key="sk-proj-debuglog-secret-0001").complete(
        REQUEST, timeout=5
    )

    (record,) = [r for r in caplog.records if r.name == "support_ask.http"]
    line = record.getMessage()
    assert line.startswith("POST https://api.openai.com/v1/chat/completions -> 200 in ")
    assert " s " in line
    assert "x-request-id=req_4f3b0d9c5e2a4f6c8e1b7a9d0c2e4f6a" in line
    assert f"'authorization': '{PLACEHOLDER}'" in line
    assert "sk-proj-debuglog-secret-0001" not in line


def test_debug_log_records_failures_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="support_ask.http")
    with pytest.raises(ProviderError):
        adapter(replay("openai/429_rate_limit")).complete(REQUEST, timeout=5)
    (record,) = [r for r in caplog.records if r.name == "support_ask.http"]
    assert "-> 429 rate_limit in" in record.getMessage()


def test_no_log_work_when_debug_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="support_ask.http")
    adapter(replay("openai/chat_completion")).complete(REQUEST, timeout=5)
    assert [r for r in caplog.records if r.name == "support_ask.http"] == []


def test_client_repr_shows_no_headers() -> None:
    client = HttpClient({"authorization": "Bearer sk-never-shown-0000"}, transport=replay())
    assert "sk-never-shown" not in repr(client)


def test_plain_http_endpoint_never_loads_the_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    import gateway.providers.http as http_layer

    def loaded() -> None:
        raise AssertionError("the CA bundle was loaded for an http:// endpoint")

    monkeypatch.setattr(http_layer, "_ssl_context", loaded)
    local = Deployment(
        name="ollama",
        provider=ProviderKind.OPENAI,
        context_window=8192,
        model="llama3.2",
        base_url="http://localhost:11434/v1",
    )
    OpenAIProvider(local, None).close()
    with pytest.raises(AssertionError, match="CA bundle"):
        adapter_for_https = Deployment(
            name="openai", provider=ProviderKind.OPENAI, context_window=8192, model="m"
        )
        OpenAIProvider(adapter_for_https, None)
