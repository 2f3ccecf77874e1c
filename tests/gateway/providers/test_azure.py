"""The Azure OpenAI adapter: Azure's address and key header on the shared OpenAI protocol."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import Decision, ErrorKind, ProviderError, ProviderKind, Request
from gateway.providers.azure import DEFAULT_API_VERSION, AzureProvider
from gateway.providers.openai import FILTERED
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import replay

KEY = Secret("0123456789abcdef0123456789abcdef")
REQUEST = Request(system="Answer briefly.", question="Where is my invoice?", max_output_tokens=300)


def adapter(
    transport: httpx.BaseTransport, api_version: str | None = "2024-10-21"
) -> AzureProvider:
    deployment = Deployment(
        name="azure-eu",
        provider=ProviderKind.AZURE,
        context_window=128_000,
        model="gpt-4o-support",
        base_url="https://acme-eu.openai.azure.com/",
        api_version=api_version,
    )
    return AzureProvider(deployment, KEY, transport=transport)


def test_request_goes_to_the_deployment_path_with_api_version_and_api_key_header() -> None:
    transport = replay("azure/chat_completion")
    adapter(transport).complete(REQUEST, timeout=5)

    request = transport.requests[0]
    assert str(request.url) == (
        "https://acme-eu.openai.azure.com/openai/deployments/gpt-4o-support/chat/completions"
        "?api-version=2024-10-21"
    )
    assert request.headers["api-key"] == KEY.reveal()
    assert "authorization" not in request.headers
    body = json.loads(request.content)
    assert body["max_completion_tokens"] == 300
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}


def test_missing_api_version_uses_the_ga_default() -> None:
    transport = replay("azure/chat_completion")
    adapter(transport, api_version=None).complete(REQUEST, timeout=5)
    assert transport.requests[0].url.params["api-version"] == DEFAULT_API_VERSION


def test_answer_is_read_past_the_filter_annotations() -> None:
    reply = adapter(replay("azure/chat_completion")).complete(REQUEST, timeout=5)
    assert reply.text == "You can change your plan under Settings > Billing."
    assert (reply.model, reply.input_tokens, reply.output_tokens) == ("gpt-4o-2024-08-06", 57, 12)
    assert not reply.refused


def test_filtered_completion_is_a_refused_answer() -> None:
    reply = adapter(replay("azure/content_filter")).complete(REQUEST, timeout=5)
    assert reply.refused is True and reply.filtered
    assert reply.finish_reason == "content_filter"
    assert reply.text == FILTERED


@pytest.mark.parametrize("chunk", [None, 3], ids=["whole", "3-byte"])
def test_stream_skips_the_prompt_filter_chunk_and_the_usage_chunk(chunk: int | None) -> None:
    texts: list[str] = []
    transport = replay("azure/stream", chunk=chunk)
    reply = adapter(transport).complete(REQUEST, timeout=5, on_text=texts.append)
    assert json.loads(transport.requests[0].content)["stream_options"] == {"include_usage": True}
    assert texts == ["Open Settings", " > Billing."]
    assert reply.model == "gpt-4o-2024-08-06"  # not the first chunk's empty model
    assert (reply.input_tokens, reply.output_tokens) == (57, 6)


def test_stream_ending_in_content_filter_is_the_providers_refusal_never_streamed() -> None:
    # The filter's explanation is the provider's words, not the model's: it goes to stderr
    # (and `refusal.message`), never into the answer stream on stdout.
    texts: list[str] = []
    reply = adapter(replay("azure/stream_content_filter")).complete(
        REQUEST, timeout=5, on_text=texts.append
    )
    assert reply.refused and reply.filtered
    assert reply.text == FILTERED
    assert texts == []


@pytest.mark.parametrize(
    ("name", "kind", "decision"),
    [
        ("azure/400_content_filter", ErrorKind.REFUSAL, Decision.FATAL),
        ("azure/401", ErrorKind.AUTH, Decision.FAIL_OVER),
        ("azure/404_deployment", ErrorKind.MODEL_NOT_FOUND, Decision.FAIL_OVER),
        ("azure/429_retry_after", ErrorKind.RATE_LIMIT, Decision.RETRY),
    ],
)
def test_azure_errors_are_classified(name: str, kind: ErrorKind, decision: Decision) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay(name)).complete(REQUEST, timeout=5)
    assert (caught.value.failure.kind, caught.value.failure.decision) == (kind, decision)


def test_azure_retry_after_ms_header_is_honoured() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("azure/429_retry_after")).complete(REQUEST, timeout=5)
    assert caught.value.failure.retry_after == pytest.approx(6.0)
