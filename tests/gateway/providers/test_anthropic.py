"""The Anthropic Messages adapter against real reply payloads."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import Decision, ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.anthropic import ANTHROPIC_VERSION, REFUSED, AnthropicProvider
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import replay

KEY = Secret("sk-ant-api03-test-0123456789abcdefghij")
REQUEST = Request(
    system="You answer Acme Cloud support questions.",
    question="How do I change my plan?",
    max_output_tokens=400,
)


def adapter(transport: httpx.BaseTransport, base_url: str | None = None) -> AnthropicProvider:
    deployment = Deployment(
        name="fallback",
        provider=ProviderKind.ANTHROPIC,
        context_window=200_000,
        model="claude-haiku-4-5",
        base_url=base_url,
    )
    return AnthropicProvider(deployment, KEY, transport=transport)


def test_request_has_key_version_top_level_system_and_required_max_tokens() -> None:
    transport = replay("anthropic/message")
    adapter(transport).complete(REQUEST, timeout=5)

    request = transport.requests[0]
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == KEY.reveal()
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in request.headers  # sending both is rejected
    assert json.loads(request.content) == {
        "model": "claude-haiku-4-5",
        "max_tokens": 400,
        "system": REQUEST.system,
        "messages": [{"role": "user", "content": REQUEST.question}],
        "stream": False,
    }


@pytest.mark.parametrize(
    "base", ["https://proxy.internal/anthropic", "https://proxy.internal/anthropic/v1/"]
)
def test_base_url_with_or_without_version_segment(base: str) -> None:
    transport = replay("anthropic/message")
    adapter(transport, base_url=base).complete(REQUEST, timeout=5)
    assert str(transport.requests[0].url) == "https://proxy.internal/anthropic/v1/messages"


def test_answer_carries_text_stop_reason_model_and_usage() -> None:
    reply = adapter(replay("anthropic/message")).complete(REQUEST, timeout=5)
    assert reply.text == "Hi! My name is Claude."
    assert reply.finish_reason == "end_turn"
    assert reply.model == "claude-haiku-4-5-20251001"
    assert (reply.input_tokens, reply.output_tokens) == (2095, 503)
    assert not reply.refused


def test_refusal_stop_reason_is_a_refused_answer_explained_by_stop_details() -> None:
    reply = adapter(replay("anthropic/refusal")).complete(REQUEST, timeout=5)
    assert reply.refused is True
    assert reply.finish_reason == "refusal"
    assert reply.text == "I can't help with bypassing another customer's account security."


def test_context_window_filled_before_any_text_is_a_context_window_failure() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("anthropic/context_window_exceeded")).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.CONTEXT_WINDOW
    assert caught.value.failure.decision is Decision.FAIL_OVER


def test_context_window_filled_after_some_text_is_a_truncated_answer() -> None:
    body = {
        "type": "message",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": "Go to Settings"}],
        "stop_reason": "model_context_window_exceeded",
        "usage": {"input_tokens": 199_000, "output_tokens": 3},
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    reply = adapter(transport).complete(REQUEST, timeout=5)
    assert (reply.text, reply.finish_reason) == ("Go to Settings", "model_context_window_exceeded")
    assert reply.cut_short is ErrorKind.CONTEXT_WINDOW, "never passed off as a whole answer"


ERRORS = [
    ("anthropic/529_overloaded", ErrorKind.OVERLOADED, Decision.RETRY),
    ("anthropic/429_rate_limit", ErrorKind.RATE_LIMIT, Decision.RETRY),
    ("anthropic/429_spend_limit", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("anthropic/400_credit_balance", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("anthropic/402_billing", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("anthropic/400_prompt_too_long", ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
    ("anthropic/413_request_too_large", ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
    ("anthropic/400_invalid_request", ErrorKind.BAD_REQUEST, Decision.FATAL),
    ("anthropic/401", ErrorKind.AUTH, Decision.FAIL_OVER),
    ("anthropic/404_model", ErrorKind.MODEL_NOT_FOUND, Decision.FAIL_OVER),
    ("anthropic/500_api_error", ErrorKind.SERVER, Decision.RETRY),
]


@pytest.mark.parametrize(("name", "kind", "decision"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error_reply_is_classified(name: str, kind: ErrorKind, decision: Decision) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay(name)).complete(REQUEST, timeout=5, on_text=lambda _: None)
    assert (caught.value.failure.kind, caught.value.failure.decision) == (kind, decision)


def test_rate_limit_retry_after_header_is_carried() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("anthropic/429_rate_limit")).complete(REQUEST, timeout=5)
    assert caught.value.failure.retry_after == pytest.approx(17.0)


# --- streams ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 11], ids=["whole", "1-byte", "11-byte"])
def test_stream_with_ping_hands_on_text_deltas_and_reads_usage(chunk: int | None) -> None:
    texts: list[str] = []
    transport = replay("anthropic/stream", chunk=chunk)
    reply = adapter(transport).complete(REQUEST, timeout=5, on_text=texts.append)

    assert json.loads(transport.requests[0].content)["stream"] is True
    assert texts == ["Hello", "!"]
    assert reply.text == "Hello!"
    assert reply.finish_reason == "end_turn"
    assert reply.model == "claude-haiku-4-5-20251001"
    assert (reply.input_tokens, reply.output_tokens) == (25, 15)  # output: the last, cumulative


def test_error_event_after_text_is_a_failure_with_the_partial_answer() -> None:
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        adapter(replay("anthropic/stream_error")).complete(REQUEST, timeout=5, on_text=texts.append)
    assert caught.value.failure.kind is ErrorKind.OVERLOADED
    assert caught.value.partial == "Go to" == "".join(texts)


def test_error_event_before_any_text_is_an_ordinary_retryable_failure() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("anthropic/stream_error_first")).complete(
            REQUEST, timeout=5, on_text=lambda _: None
        )
    assert caught.value.failure.kind is ErrorKind.OVERLOADED
    assert caught.value.failure.decision is Decision.RETRY
    assert caught.value.partial == ""


def test_stream_without_message_stop_is_cut_not_complete() -> None:
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        adapter(replay("anthropic/stream_no_stop")).complete(
            REQUEST, timeout=5, on_text=texts.append
        )
    assert caught.value.failure.kind is ErrorKind.NETWORK
    assert caught.value.partial == "Your plan renews"


def test_streamed_refusal_without_text_writes_an_explanation_and_is_refused() -> None:
    texts: list[str] = []
    reply = adapter(replay("anthropic/stream_refusal")).complete(
        REQUEST, timeout=5, on_text=texts.append
    )
    assert reply.refused is True
    assert reply.text == REFUSED == "".join(texts)


def test_event_that_is_not_json_is_a_failure() -> None:
    data = b'event: message_start\ndata: {"type": "message_start", "message": {\n\n'
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=data))
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5, on_text=lambda _: None)
    assert caught.value.failure.kind is ErrorKind.SERVER
    assert "not valid JSON" in caught.value.failure.detail
