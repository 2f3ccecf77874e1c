"""Each provider's rate-limit headers read as it sends them, and carried on the reply (or
the failure) of the call they came with."""

from __future__ import annotations

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import Headroom, ProviderError, ProviderKind, Request, Window
from gateway.providers.anthropic import AnthropicProvider
from gateway.providers.azure import AzureProvider
from gateway.providers.gemini import GeminiProvider
from gateway.providers.headroom import anthropic, x_ratelimit
from gateway.providers.openai import OpenAIProvider
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import body_bytes, replay

NOW = 1_755_780_059.0  # 2025-08-21T12:40:59Z
REQUEST = Request("You answer Acme support questions.", "How do I change my plan?", 400)
KEY = Secret("sk-test-0123456789abcdefghijklmn")

# A chat completion's headers as a user of OpenAI's API posted them (the OpenAI developer
# forum, "How to get rate limit reset time for response API?").
OPENAI = {
    "x-ratelimit-limit-requests": "5000",
    "x-ratelimit-limit-tokens": "160000",
    "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-remaining-tokens": "159976",
    "x-ratelimit-reset-requests": "12ms",
    "x-ratelimit-reset-tokens": "9ms",
}
# A message's headers as Anthropic sent them (the tidyllm package's recorded test reply,
# messages-e050b5-POST.R), with the output tokens nearly spent.
ANTHROPIC = {
    "anthropic-ratelimit-input-tokens-limit": "80000",
    "anthropic-ratelimit-input-tokens-remaining": "80000",
    "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
    "anthropic-ratelimit-output-tokens-limit": "16000",
    "anthropic-ratelimit-output-tokens-remaining": "400",
    "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:41:58Z",
    "anthropic-ratelimit-requests-limit": "1000",
    "anthropic-ratelimit-requests-remaining": "999",
    "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59Z",
    "anthropic-ratelimit-tokens-limit": "96000",
    "anthropic-ratelimit-tokens-remaining": "96000",
    "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:59Z",
}


def test_openai_states_its_limits_what_is_left_and_a_go_duration_to_the_reset() -> None:
    assert x_ratelimit(OPENAI, NOW) == Headroom(
        Window(5000, 4999, pytest.approx(0.012)),  # type: ignore[arg-type]
        Window(160_000, 159_976, pytest.approx(0.009)),  # type: ignore[arg-type]
    )
    daily = x_ratelimit({**OPENAI, "x-ratelimit-reset-requests": "6m0s"}, NOW)
    assert daily is not None and daily.requests == Window(5000, 4999, 360.0)


def test_azure_states_only_what_is_left_and_minus_one_means_not_counted() -> None:
    seen = x_ratelimit(
        {"x-ratelimit-remaining-requests": "79", "x-ratelimit-remaining-tokens": "-1"}, NOW
    )
    assert seen == Headroom(Window(None, 79), None)


@pytest.mark.parametrize(
    "headers",
    [{}, {"x-ratelimit-remaining-requests": "lots"}, {"x-ratelimit-limit-requests": "500"}],
)
def test_headers_that_state_nothing_left_are_no_headroom(headers: dict[str, str]) -> None:
    assert x_ratelimit(headers, NOW) is None


def test_anthropic_resets_are_rfc_3339_times_and_the_tightest_token_window_stands() -> None:
    seen = anthropic(ANTHROPIC, NOW)
    assert seen is not None
    assert seen.requests == Window(1000, 999, 0.0)
    assert seen.tokens == Window(16_000, 400, 59.0)  # output: 2.5 % left, the others whole


def test_an_unreadable_reset_leaves_the_counts() -> None:
    seen = anthropic({**ANTHROPIC, "anthropic-ratelimit-requests-reset": "soon"}, NOW)
    assert seen is not None and seen.requests == Window(1000, 999, None)


def _deployment(kind: ProviderKind, **fields: object) -> Deployment:
    return Deployment("primary", kind, 128_000, **fields)  # type: ignore[arg-type]


def test_a_reply_carries_the_headers_it_came_with() -> None:
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers=OPENAI, content=body_bytes("openai/chat_completion"))
    )
    reply = OpenAIProvider(
        _deployment(ProviderKind.OPENAI, model="gpt-4o"), KEY, transport=transport
    ).complete(REQUEST, timeout=5)
    assert reply.headroom == x_ratelimit(OPENAI, NOW)


def test_a_streamed_reply_carries_them_too() -> None:
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers=ANTHROPIC, content=body_bytes("anthropic/stream"))
    )
    adapter = AnthropicProvider(
        _deployment(ProviderKind.ANTHROPIC, model="claude-haiku-4-5"), KEY, transport=transport
    )
    reply = adapter.complete(REQUEST, timeout=5, on_text=lambda _: None)
    # Read on the adapter's own clock: a reset in the past is whole now.
    assert reply.headroom is not None and reply.headroom.requests == Window(1000, 999, 0.0)


def _failure(adapter: object) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        adapter.complete(REQUEST, timeout=5)  # type: ignore[attr-defined]
    return raised.value


def test_a_429_carries_the_headers_that_came_with_it() -> None:
    anthropic_429 = _failure(
        AnthropicProvider(
            _deployment(ProviderKind.ANTHROPIC, model="claude-haiku-4-5"),
            KEY,
            transport=replay("anthropic/429_rate_limit"),
        )
    ).failure
    assert anthropic_429.headroom is not None
    assert (
        anthropic_429.headroom.tokens is not None and anthropic_429.headroom.tokens.remaining == 0
    )
    azure_429 = _failure(
        AzureProvider(
            _deployment(
                ProviderKind.AZURE, model="gpt-4o-support", base_url="https://acme.openai.azure.com"
            ),
            KEY,
            transport=replay("azure/429_retry_after"),
        )
    ).failure
    assert azure_429.headroom == Headroom(Window(None, 79), Window(None, 0))


def test_gemini_sends_no_rate_limit_headers_so_its_429_has_none() -> None:
    gemini_429 = _failure(
        GeminiProvider(
            _deployment(ProviderKind.GEMINI, model="gemini-2.5-pro"),
            KEY,
            transport=replay("gemini/429_per_minute"),
        )
    ).failure
    assert gemini_429.headroom is None and gemini_429.retry_after is not None
