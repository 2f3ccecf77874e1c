"""A support chat reaches every provider as turns in its own wire format: the system
prompt, then the thread oldest first, then the current message; Anthropic and Gemini
get alternating turns that begin with the customer."""

from __future__ import annotations

import json
from typing import Any

from gateway.config import Deployment
from gateway.model import ProviderKind, Request, Role, Turn
from gateway.providers.anthropic import AnthropicProvider
from gateway.providers.azure import AzureProvider
from gateway.providers.gemini import GeminiProvider
from gateway.providers.openai import OpenAIProvider
from gateway.providers.turns import AGENT_BEFORE
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import replay

KEY = Secret("test-key-0123456789abcdefghij")
CHAT = Request(
    system="You answer Acme Cloud support questions.",
    question="It says the link expired, how long does it last?",
    max_output_tokens=400,
    turns=(
        Turn(Role.AGENT, "Hi! How can I help?"),
        Turn(Role.CUSTOMER, "I can't log in."),
        Turn(Role.CUSTOMER, "I tried twice."),
        Turn(Role.AGENT, "Use Forgot password on the sign-in page to get a reset link."),
    ),
)


def sent(provider: Any, transport: Any) -> dict[str, Any]:
    provider.complete(CHAT, timeout=5)
    body: dict[str, Any] = json.loads(transport.requests[0].content)
    return body


def deployment(kind: ProviderKind, **extra: Any) -> Deployment:
    return Deployment(name="d", provider=kind, context_window=128_000, model="m", **extra)


def test_openai_and_azure_get_every_turn_as_a_message_after_the_system_prompt() -> None:
    expected = [
        {"role": "system", "content": CHAT.system},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "I can't log in."},
        {"role": "user", "content": "I tried twice."},
        {"role": "assistant", "content": CHAT.turns[3].content},
        {"role": "user", "content": CHAT.question},
    ]
    openai = replay("openai/chat_completion")
    assert (
        sent(OpenAIProvider(deployment(ProviderKind.OPENAI), KEY, transport=openai), openai)[
            "messages"
        ]
        == expected
    )
    azure = replay("azure/chat_completion")
    on_azure = deployment(
        ProviderKind.AZURE, base_url="https://acme.openai.azure.com", api_version="2024-10-21"
    )
    assert sent(AzureProvider(on_azure, KEY, transport=azure), azure)["messages"] == expected


def _alternating(agent: str) -> list[tuple[str, str]]:
    return [
        ("user", f"{AGENT_BEFORE}Hi! How can I help?\n\nI can't log in.\n\nI tried twice."),
        (agent, CHAT.turns[3].content),
        ("user", CHAT.question),
    ]


def test_anthropic_gets_alternating_turns_that_begin_with_the_customer() -> None:
    transport = replay("anthropic/message")
    body = sent(
        AnthropicProvider(deployment(ProviderKind.ANTHROPIC), KEY, transport=transport), transport
    )
    assert body["system"] == CHAT.system
    assert [(m["role"], m["content"]) for m in body["messages"]] == _alternating("assistant")


def test_gemini_gets_user_and_model_contents_after_its_system_instruction() -> None:
    transport = replay("gemini/generate")
    body = sent(
        GeminiProvider(deployment(ProviderKind.GEMINI), KEY, transport=transport), transport
    )
    assert body["systemInstruction"] == {"parts": [{"text": CHAT.system}]}
    contents = [(c["role"], c["parts"][0]["text"]) for c in body["contents"]]
    assert contents == _alternating("model")


def test_a_question_with_no_thread_is_one_user_message_as_before() -> None:
    transport = replay("anthropic/message")
    bare = Request(system="S", question="Where is my invoice?", max_output_tokens=10)
    AnthropicProvider(deployment(ProviderKind.ANTHROPIC), KEY, transport=transport).complete(
        bare, timeout=5
    )
    body = json.loads(transport.requests[0].content)
    assert body["messages"] == [{"role": "user", "content": "Where is my invoice?"}]


def test_a_thread_ending_with_the_customer_joins_the_current_message_for_anthropic() -> None:
    transport = replay("gemini/generate")
    chat = Request(
        system="S",
        question="Any news?",
        max_output_tokens=10,
        turns=(Turn(Role.CUSTOMER, "Where is my invoice?"),),
    )
    GeminiProvider(deployment(ProviderKind.GEMINI), KEY, transport=transport).complete(
        chat, timeout=5
    )
    contents = json.loads(transport.requests[0].content)["contents"]
    assert contents == [{"role": "user", "parts": [{"text": "Where is my invoice?\n\nAny news?"}]}]
