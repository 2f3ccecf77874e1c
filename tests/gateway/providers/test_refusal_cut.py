"""A refusal stream cut before its terminal event is still a refusal: the model had
declined, so retrying or failing over would only put the same question to another model.

Each provider's real refusal stream (tests/support/fixtures/providers) is cut just after the
frame that signals the refusal, both by a clean EOF and by a dropped connection.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import ProviderError, ProviderKind, Request
from gateway.providers import build_provider
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import case

REQUEST = Request(
    system="Be brief.", question="Something the model declines.", max_output_tokens=50
)

# fixture, the text of the frame after which the stream is cut, the answer the user reads
CASES = {
    ProviderKind.OPENAI: (
        "openai/stream_refusal",
        "I cannot assist",
        "I'm sorry, I cannot assist with that request.",
    ),
    ProviderKind.AZURE: ("azure/stream_content_filter", '"content_filter"', None),
    ProviderKind.ANTHROPIC: (
        "anthropic/stream_refusal",
        '"stop_reason":"refusal"',
        "The model declined to answer this request.",
    ),
    ProviderKind.GEMINI: (
        "gemini/stream_blocked",
        "blockReason",
        "The prompt was blocked for safety reasons.",
    ),
}


def cut_after(name: str, marker: str) -> bytes:
    """The fixture's stream up to and including the frame that holds `marker`."""
    c = case(name)
    newline = c.get("newline", "\n")
    lines: list[str] = c["sse"]
    at = next(i for i, line in enumerate(lines) if marker in line)
    end = lines.index("", at) + 1  # the blank line that dispatches that frame
    return "".join(line + newline for line in lines[:end]).encode()


class Dropped(httpx.SyncByteStream):
    """The body as far as `data`, then the connection lost."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self.data
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def deployment(kind: ProviderKind) -> Deployment:
    azure = kind is ProviderKind.AZURE
    return Deployment(
        name=kind.value,
        provider=kind,
        context_window=100_000,
        model="m",
        base_url="https://acme.openai.azure.com" if azure else None,
        api_version="2024-10-21" if azure else None,
    )


@pytest.mark.parametrize("how", ["eof", "dropped"])
@pytest.mark.parametrize("kind", list(CASES), ids=[k.value for k in CASES])
def test_a_refusal_stream_cut_before_its_end_is_a_refusal(kind: ProviderKind, how: str) -> None:
    name, marker, text = CASES[kind]
    data = cut_after(name, marker)
    headers = case(name)["headers"]

    def answer(request: httpx.Request) -> httpx.Response:
        if how == "eof":
            return httpx.Response(200, headers=headers, content=data)
        return httpx.Response(200, headers=headers, stream=Dropped(data))

    provider = build_provider(
        deployment(kind), Secret("k" * 32), transport=httpx.MockTransport(answer)
    )
    seen: list[str] = []
    reply = provider.complete(REQUEST, timeout=5, on_text=seen.append)

    assert reply.refused
    # What the user read is the model's refusal the JSON holds; a filter's explanation is
    # the provider's words, never streamed as an answer (stderr and `refusal` carry it).
    assert "".join(seen) == ("" if reply.filtered else reply.text)
    if text is not None:
        assert reply.text == text


def test_an_ordinary_answer_cut_short_is_still_a_failure() -> None:
    data = cut_after("openai/stream", '"Hello"')
    provider = build_provider(
        deployment(ProviderKind.OPENAI),
        Secret("k" * 32),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, stream=Dropped(data))),
    )
    with pytest.raises(ProviderError) as caught:
        provider.complete(REQUEST, timeout=5, on_text=lambda _: None)
    assert caught.value.partial
