"""The Gemini generateContent adapter against real reply payloads."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import Decision, ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.gemini import GeminiProvider
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import replay

KEY = Secret("AIzaSyTest0123456789abcdefghijklmnopqr")
REQUEST = Request(
    system="You answer Acme Cloud support questions.",
    question="How do I change my plan?",
    max_output_tokens=400,
)
BASE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro"


def adapter(transport: httpx.BaseTransport, model: str = "gemini-2.5-pro") -> GeminiProvider:
    deployment = Deployment(
        name="long", provider=ProviderKind.GEMINI, context_window=1_000_000, model=model
    )
    return GeminiProvider(deployment, KEY, transport=transport)


def test_request_uses_header_key_system_instruction_and_max_output_tokens() -> None:
    transport = replay("gemini/generate")
    adapter(transport).complete(REQUEST, timeout=5)

    request = transport.requests[0]
    assert str(request.url) == f"{BASE}:generateContent"
    assert request.headers["x-goog-api-key"] == KEY.reveal()
    assert "key" not in request.url.params  # never in the URL, which ends up in logs
    assert json.loads(request.content) == {
        "systemInstruction": {"parts": [{"text": REQUEST.system}]},
        "contents": [{"role": "user", "parts": [{"text": REQUEST.question}]}],
        "generationConfig": {"maxOutputTokens": 400},
    }


def test_models_prefix_in_the_configured_name_is_not_doubled() -> None:
    transport = replay("gemini/generate")
    adapter(transport, model="models/gemini-2.5-pro").complete(REQUEST, timeout=5)
    assert str(transport.requests[0].url) == f"{BASE}:generateContent"


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        # Google's documented form (python-genai's base_url): the version is appended
        (
            "https://generativelanguage.googleapis.com",
            "https://generativelanguage.googleapis.com/v1beta",
        ),
        (
            "https://generativelanguage.googleapis.com/",
            "https://generativelanguage.googleapis.com/v1beta",
        ),
        # a version already written is kept, whichever it is
        (
            "https://generativelanguage.googleapis.com/v1beta",
            "https://generativelanguage.googleapis.com/v1beta",
        ),
        (
            "https://generativelanguage.googleapis.com/v1",
            "https://generativelanguage.googleapis.com/v1",
        ),
        ("https://proxy.example/google/v1alpha", "https://proxy.example/google/v1alpha"),
        # a proxy's own path, without a version: Google's paths go under it, versioned
        (
            "https://gateway.example/acct/google-ai-studio",
            "https://gateway.example/acct/google-ai-studio/v1beta",
        ),
    ],
)
def test_base_url_with_or_without_the_api_version(base_url: str, root: str) -> None:
    transport = replay("gemini/generate")
    deployment = Deployment(
        "g", ProviderKind.GEMINI, 1_000_000, model="gemini-2.5-pro", base_url=base_url
    )
    GeminiProvider(deployment, KEY, transport=transport).complete(REQUEST, timeout=5)
    assert str(transport.requests[0].url) == f"{root}/models/gemini-2.5-pro:generateContent"


def test_answer_skips_thought_parts_and_reports_model_version_and_usage() -> None:
    reply = adapter(replay("gemini/generate")).complete(REQUEST, timeout=5)
    assert reply.text == "Go to Settings > Billing and choose Change plan."
    assert reply.finish_reason == "STOP"
    assert reply.model == "gemini-2.5-pro"
    assert reply.input_tokens == 64
    assert reply.output_tokens == 11 + 112  # visible text plus thinking, as billed
    assert not reply.refused


def test_blocked_prompt_with_no_candidates_is_a_refused_answer() -> None:
    reply = adapter(replay("gemini/blocked_prompt")).complete(REQUEST, timeout=5)
    assert reply.refused is True and reply.filtered
    assert reply.finish_reason == "PROHIBITED_CONTENT"
    assert "PROHIBITED_CONTENT" in reply.text


def test_safety_finish_reason_is_a_refused_answer() -> None:
    reply = adapter(replay("gemini/safety")).complete(REQUEST, timeout=5)
    assert reply.refused is True
    assert reply.finish_reason == "SAFETY"
    assert reply.text  # never an empty refusal


@pytest.mark.parametrize("reason", ["RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"])
def test_every_safety_family_finish_reason_is_a_refusal(reason: str) -> None:
    body = {
        "candidates": [
            {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": reason}
        ],
        "modelVersion": "gemini-2.5-flash",
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    assert adapter(transport).complete(REQUEST, timeout=5).refused is True


def test_max_tokens_finish_is_an_answer_not_a_refusal() -> None:
    body = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Go to"}], "role": "model"},
                "finishReason": "MAX_TOKENS",
            }
        ],
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    reply = adapter(transport).complete(REQUEST, timeout=5)
    assert (reply.text, reply.finish_reason, reply.refused) == ("Go to", "MAX_TOKENS", False)


ERRORS = [
    ("gemini/429_per_minute", ErrorKind.RATE_LIMIT, Decision.RETRY),
    ("gemini/429_per_day", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("gemini/400_api_key_invalid", ErrorKind.AUTH, Decision.FAIL_OVER),
    ("gemini/403_permission", ErrorKind.AUTH, Decision.FAIL_OVER),
    ("gemini/400_token_count", ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
    ("gemini/400_unknown_field", ErrorKind.BAD_REQUEST, Decision.FATAL),
    ("gemini/404_model", ErrorKind.MODEL_NOT_FOUND, Decision.FAIL_OVER),
    ("gemini/500_internal", ErrorKind.SERVER, Decision.RETRY),
    ("gemini/503_unavailable", ErrorKind.OVERLOADED, Decision.RETRY),
    ("gemini/429_list_body", ErrorKind.RATE_LIMIT, Decision.RETRY),
]


@pytest.mark.parametrize(("name", "kind", "decision"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error_reply_is_classified(name: str, kind: ErrorKind, decision: Decision) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay(name)).complete(REQUEST, timeout=5)
    assert (caught.value.failure.kind, caught.value.failure.decision) == (kind, decision)


def test_per_minute_quota_carries_the_body_retry_delay() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("gemini/429_per_minute")).complete(REQUEST, timeout=5)
    assert caught.value.failure.retry_after == pytest.approx(25.0, abs=1.0)


# --- streams ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 9], ids=["whole", "1-byte", "9-byte"])
def test_crlf_stream_ends_at_eof_with_the_last_chunks_finish_reason(chunk: int | None) -> None:
    texts: list[str] = []
    transport = replay("gemini/stream", chunk=chunk)
    reply = adapter(transport).complete(REQUEST, timeout=5, on_text=texts.append)

    assert str(transport.requests[0].url) == f"{BASE}:streamGenerateContent?alt=sse"
    assert texts == ["Go to Settings", " > Billing", " and choose Change plan."]
    assert reply.text == "".join(texts)
    assert reply.finish_reason == "STOP"
    assert reply.model == "gemini-2.5-flash"
    assert (reply.input_tokens, reply.output_tokens) == (64, 11)


def test_stream_that_reaches_eof_without_a_finish_reason_is_cut() -> None:
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        adapter(replay("gemini/stream_no_finish")).complete(
            REQUEST, timeout=5, on_text=texts.append
        )
    assert caught.value.failure.kind is ErrorKind.NETWORK
    assert caught.value.partial == "Go to Settings > Billing"


def test_error_frame_mid_stream_is_classified_with_the_partial_answer() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("gemini/stream_error")).complete(REQUEST, timeout=5, on_text=lambda _: None)
    assert caught.value.failure.kind is ErrorKind.OVERLOADED
    assert caught.value.failure.decision is Decision.RETRY
    assert caught.value.partial == "Go to Settings"


def test_stream_blocked_at_the_prompt_is_the_providers_refusal_never_streamed() -> None:
    # Its message is the provider's, for stderr and `refusal.message`: not answer text.
    texts: list[str] = []
    reply = adapter(replay("gemini/stream_blocked")).complete(
        REQUEST, timeout=5, on_text=texts.append
    )
    assert reply.refused and reply.filtered
    assert reply.text == "The prompt was blocked for safety reasons."
    assert texts == []
