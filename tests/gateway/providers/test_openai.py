"""The OpenAI adapter (and every OpenAI-compatible server) against real reply payloads."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.config import Deployment
from gateway.model import Decision, ErrorKind, ProviderError, ProviderKind, Request, Role, Turn
from gateway.providers.openai import FILTERED, OpenAIProvider
from gateway.record import replace
from gateway.secrets.key import Secret
from tests.support.provider_fixtures import Replay, replay, response

KEY = Secret("sk-proj-test-0123456789abcdefghijklmnop")
REQUEST = Request(
    system="You answer Acme Cloud support questions.",
    question="How do I change my plan?",
    max_output_tokens=400,
)


def adapter(
    transport: httpx.BaseTransport, key: Secret | None = KEY, **fields: object
) -> OpenAIProvider:
    settings: dict[str, object] = {"model": "gpt-4o-mini", **fields}
    deployment = Deployment(
        name="primary",
        provider=ProviderKind.OPENAI,
        context_window=128_000,
        **settings,  # type: ignore[arg-type]
    )
    return OpenAIProvider(deployment, key, transport=transport)


def sent(transport: Replay, index: int = 0) -> dict[str, object]:
    body: dict[str, object] = json.loads(transport.requests[index].content)
    return body


# --- the request ------------------------------------------------------------------------------


def test_request_to_openai_uses_bearer_key_both_messages_and_max_completion_tokens() -> None:
    transport = replay("openai/chat_completion")
    adapter(transport).complete(REQUEST, timeout=5)

    request = transport.requests[0]
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {KEY.reveal()}"
    assert request.headers["content-type"] == "application/json"
    assert sent(transport) == {
        "messages": [
            {"role": "system", "content": REQUEST.system},
            {"role": "user", "content": REQUEST.question},
        ],
        "model": "gpt-4o-mini",
        "max_completion_tokens": 400,
        "stream": False,
    }


def test_streaming_request_to_openai_asks_for_usage() -> None:
    transport = replay("openai/stream")
    adapter(transport).complete(REQUEST, timeout=5, on_text=lambda _: None)

    body = sent(transport)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_a_retry_sends_the_first_attempts_bytes_and_another_request_its_own() -> None:
    # The body is encoded once per request an adapter is given (a question's retries):
    # what goes out must be what a fresh adapter would send, stream flag and all.
    names = ("openai/chat_completion", "openai/stream", "openai/chat_completion")
    transport = replay(*names, "openai/chat_completion")
    kept = adapter(transport)
    kept.complete(REQUEST, timeout=5)
    kept.complete(REQUEST, timeout=5, on_text=lambda _: None)
    kept.complete(REQUEST, timeout=5)
    other = replace(REQUEST, question='Why "Security" \u2014 and not\nBilling?')
    kept.complete(other, timeout=5)

    for index, (request, stream) in enumerate(
        ((REQUEST, False), (REQUEST, True), (REQUEST, False), (other, False))
    ):
        fresh = replay("openai/stream" if stream else "openai/chat_completion")
        on_text = (lambda _: None) if stream else None
        adapter(fresh).complete(request, timeout=5, on_text=on_text)
        assert transport.requests[index].content == fresh.requests[0].content
    assert sent(transport, 3)["messages"][1] == {"role": "user", "content": other.question}
    assert [sent(transport, i)["stream"] for i in range(4)] == [False, True, False, False]


PROMPT = (
    'Passage [1]: under Settings > "Security", C:\\Users\\me\n\tthen\r\nSave. \u2014 \U0001f600\n'
    * 30
)


@pytest.mark.parametrize(
    "text",
    [PROMPT, PROMPT + "\x00\x08\x0c\x1f\x7f\u2028", "", "é"],
    ids=["long", "controls", "empty", "short"],
)
@pytest.mark.parametrize(
    "base_url", [None, "http://localhost:11434/v1"], ids=["openai", "compatible"]
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_body_is_the_bytes_a_client_sending_its_json_sends(
    text: str, base_url: str | None, stream: bool
) -> None:
    # The adapter writes its body's JSON itself: byte for byte what httpx's `json=` sends
    # for the same object, whatever the prompt, the thread and the question hold.
    turns = (Turn(Role.AGENT, text[::-1]), Turn(Role.CUSTOMER, "and then?"))
    request = replace(REQUEST, system=text, question=text + "?", turns=turns)
    transport = replay("openai/stream" if stream else "openai/chat_completion")
    on_text = (lambda _: None) if stream else None
    model = None if base_url else "gpt-4o-mini"
    adapter(transport, base_url=base_url, model=model).complete(request, timeout=5, on_text=on_text)

    system = [{"role": "system", "content": text}] if text else []
    expected: dict[str, object] = {
        "messages": [
            *system,
            {"role": "assistant", "content": text[::-1]},
            {"role": "user", "content": "and then?"},
            {"role": "user", "content": text + "?"},
        ],
        **({"model": model} if model else {}),
        ("max_tokens" if base_url else "max_completion_tokens"): 400,
        "stream": stream,
        **({"stream_options": {"include_usage": True}} if stream and not base_url else {}),
    }
    wire = httpx.Request("POST", "http://x/", json=expected).content
    assert transport.requests[0].content == wire


def test_compatible_server_gets_max_tokens_no_stream_options_and_no_auth_without_key() -> None:
    # Ollama: no key at all, an OpenAI-compatible base URL, one extra header.
    transport = replay("compatible/openrouter_stream")
    provider = adapter(
        transport,
        key=None,
        base_url="http://localhost:11434/v1/",
        headers=(("X-Title", "support-ask"),),
    )
    provider.complete(REQUEST, timeout=5, on_text=lambda _: None)

    request = transport.requests[0]
    assert str(request.url) == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in request.headers
    assert request.headers["x-title"] == "support-ask"
    body = sent(transport)
    assert body["max_tokens"] == 400
    assert "max_completion_tokens" not in body
    assert "stream_options" not in body


def test_configured_authorization_header_cannot_replace_the_key() -> None:
    transport = replay("openai/chat_completion")
    adapter(transport, headers=(("Authorization", "Bearer stale"),)).complete(REQUEST, timeout=5)
    assert transport.requests[0].headers["authorization"] == f"Bearer {KEY.reveal()}"


# --- whole replies ----------------------------------------------------------------------------


def test_answer_carries_text_finish_reason_served_model_and_usage() -> None:
    reply = adapter(replay("openai/chat_completion")).complete(REQUEST, timeout=5)

    assert reply.text == "Hello! How can I assist you today?"
    assert reply.finish_reason == "stop"
    assert reply.model == "gpt-4.1-2025-04-14"
    assert (reply.input_tokens, reply.output_tokens) == (19, 10)
    assert reply.refused is False


def test_refusal_field_is_a_refused_answer_even_with_finish_reason_stop() -> None:
    reply = adapter(replay("openai/refusal")).complete(REQUEST, timeout=5)

    assert reply.refused is True
    assert reply.text == "I'm sorry, I cannot assist with that request."
    assert reply.finish_reason == "stop"


def test_content_filter_finish_is_a_refused_answer_that_says_so() -> None:
    reply = adapter(replay("openai/content_filter")).complete(REQUEST, timeout=5)

    assert reply.refused is True
    assert reply.finish_reason == "content_filter"
    assert reply.text == FILTERED


def test_openrouter_200_with_an_error_choice_is_a_retryable_failure_not_an_empty_answer() -> None:
    provider = adapter(
        replay("compatible/openrouter_200_choice_error"), base_url="https://openrouter.ai/api/v1"
    )
    with pytest.raises(ProviderError) as caught:
        provider.complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.SERVER
    assert caught.value.failure.decision is Decision.RETRY
    assert "high demand" in caught.value.failure.detail


@pytest.mark.parametrize(
    "body",
    [b"<html><body>Service Unavailable</body></html>", b'{"id": "x", "choices": []}', b"[]", b""],
    ids=["html", "no-choices", "list", "empty"],
)
def test_200_that_is_not_a_completion_is_a_retryable_server_failure(body: bytes) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is ErrorKind.SERVER
    assert caught.value.failure.decision is Decision.RETRY


# --- errors: each through the adapter, classified by gateway.classify.errors -------------

ERRORS = [
    ("openai/429_rate_limit", ErrorKind.RATE_LIMIT, Decision.RETRY),
    ("openai/429_insufficient_quota", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("openai/401_invalid_api_key", ErrorKind.AUTH, Decision.FAIL_OVER),
    ("openai/403_region", ErrorKind.AUTH, Decision.FAIL_OVER),
    ("openai/404_model_not_found", ErrorKind.MODEL_NOT_FOUND, Decision.FAIL_OVER),
    ("openai/400_context_length_exceeded", ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
    ("openai/400_unsupported_parameter", ErrorKind.BAD_REQUEST, Decision.FATAL),
    ("openai/400_invalid_prompt", ErrorKind.REFUSAL, Decision.FATAL),
    ("openai/500_server_error", ErrorKind.SERVER, Decision.RETRY),
    ("openai/503_overloaded", ErrorKind.OVERLOADED, Decision.RETRY),
    ("compatible/openrouter_402", ErrorKind.QUOTA, Decision.FAIL_OVER),
    ("compatible/ollama_404", ErrorKind.MODEL_NOT_FOUND, Decision.FAIL_OVER),
    ("compatible/ollama_503_busy", ErrorKind.OVERLOADED, Decision.RETRY),
    ("compatible/ollama_499", ErrorKind.UNKNOWN, Decision.RETRY),
    ("compatible/vllm_400_context_flat", ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
    ("compatible/mistral_422_stream_options", ErrorKind.BAD_REQUEST, Decision.FATAL),
    ("compatible/proxy_502_html", ErrorKind.SERVER, Decision.RETRY),
    ("compatible/cloudflare_524_text", ErrorKind.SERVER, Decision.RETRY),
    ("compatible/empty_503", ErrorKind.OVERLOADED, Decision.RETRY),
]


@pytest.mark.parametrize(("name", "kind", "decision"), ERRORS, ids=[e[0] for e in ERRORS])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_error_reply_is_classified(
    name: str, kind: ErrorKind, decision: Decision, stream: bool
) -> None:
    provider = adapter(replay(name))
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider.complete(REQUEST, timeout=5, on_text=texts.append if stream else None)
    failure = caught.value.failure
    assert (failure.kind, failure.decision) == (kind, decision)
    assert failure.status == response(name).status_code
    assert failure.detail
    assert texts == []
    assert caught.value.partial == ""


def test_rate_limit_carries_the_servers_wait() -> None:
    with pytest.raises(ProviderError) as caught:
        adapter(replay("openai/429_rate_limit")).complete(REQUEST, timeout=5)
    assert caught.value.failure.retry_after == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), ErrorKind.NETWORK),
        (httpx.ConnectError("[Errno -2] Name or service not known"), ErrorKind.NETWORK),
        (
            httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
            ErrorKind.NETWORK,
        ),
        (httpx.ReadError("[Errno 104] Connection reset by peer"), ErrorKind.NETWORK),
        (httpx.ConnectTimeout("timed out"), ErrorKind.TIMEOUT),
        (httpx.ReadTimeout("The read operation timed out"), ErrorKind.TIMEOUT),
    ],
    ids=["refused", "dns", "tls", "reset", "connect-timeout", "read-timeout"],
)
def test_transport_exceptions_become_classified_failures(exc: Exception, kind: ErrorKind) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exc

    with pytest.raises(ProviderError) as caught:
        adapter(httpx.MockTransport(fail)).complete(REQUEST, timeout=5)
    assert caught.value.failure.kind is kind
    assert caught.value.failure.decision is Decision.RETRY
    assert caught.value.__cause__ is None  # the foreign exception does not ride along


def test_redirect_is_not_followed() -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(301, headers={"location": "https://elsewhere.example/v1"})
    )
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5)
    assert caught.value.failure.status == 301


# --- streams ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 7, 64], ids=["whole", "1-byte", "7-byte", "64-byte"])
def test_stream_hands_each_delta_on_and_returns_the_whole_answer(chunk: int | None) -> None:
    texts: list[str] = []
    reply = adapter(replay("openai/stream", chunk=chunk)).complete(
        REQUEST, timeout=5, on_text=texts.append
    )

    assert texts == ["Hello", " there, how can I help?"]
    assert reply.text == "Hello there, how can I help?"
    assert reply.finish_reason == "stop"
    assert reply.model == "gpt-4o-mini"
    assert (reply.input_tokens, reply.output_tokens) == (22, 8)


def test_stream_delta_reaches_on_text_before_the_rest_of_the_body_is_read() -> None:
    yielded: list[int] = []
    data = (
        b"".join(
            f"data: {json.dumps(c)}\n\n".encode()
            for c in [
                {"model": "m", "choices": [{"index": 0, "delta": {"content": "first"}}]},
                {"model": "m", "choices": [{"index": 0, "delta": {"content": " second"}}]},
                {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        )
        + b"data: [DONE]\n\n"
    )
    frames = data.split(b"\n\n")

    class Frames(httpx.SyncByteStream):
        def __iter__(self):  # type: ignore[no-untyped-def]
            for n, frame in enumerate(frames, 1):
                yielded.append(n)
                yield frame + b"\n\n"

    seen_at: list[int] = []
    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=Frames()))
    adapter(transport).complete(REQUEST, timeout=5, on_text=lambda _: seen_at.append(len(yielded)))

    assert seen_at == [1, 2]  # each delta handed on before the next frame was even read


def test_stream_ending_with_finish_reason_but_no_done_is_complete() -> None:
    reply = adapter(replay("openai/stream_no_done")).complete(
        REQUEST, timeout=5, on_text=lambda _: None
    )
    assert (reply.text, reply.finish_reason) == ("Yes.", "stop")


def test_stream_refusal_is_streamed_and_marked_refused() -> None:
    texts: list[str] = []
    reply = adapter(replay("openai/stream_refusal")).complete(
        REQUEST, timeout=5, on_text=texts.append
    )

    assert "".join(texts) == "I'm sorry, I cannot assist with that request."
    assert reply.text == "".join(texts)
    assert reply.refused is True


def test_stream_with_openrouter_comment_lines_skips_them() -> None:
    texts: list[str] = []
    provider = adapter(
        replay("compatible/openrouter_stream"), base_url="https://openrouter.ai/api/v1"
    )
    reply = provider.complete(REQUEST, timeout=5, on_text=texts.append)

    assert texts == ["Open ", "Settings > Billing."]
    assert reply.model == "anthropic/claude-haiku-4.5"
    assert (reply.input_tokens, reply.output_tokens) == (31, 9)


@pytest.mark.parametrize(
    ("name", "kind", "partial"),
    [
        ("openai/stream_error", ErrorKind.SERVER, "To reset"),
        ("compatible/openrouter_stream_error", ErrorKind.SERVER, "Sure"),
        ("compatible/ollama_stream_truncated", ErrorKind.NETWORK, "You can reset it"),
        ("openai/stream_invalid_json", ErrorKind.SERVER, "Your invoice"),
    ],
    ids=["error-frame", "openrouter-error-chunk", "eof-without-finish", "invalid-json-chunk"],
)
def test_broken_stream_is_a_failure_carrying_the_text_already_shown(
    name: str, kind: ErrorKind, partial: str
) -> None:
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        adapter(replay(name, chunk=5)).complete(REQUEST, timeout=5, on_text=texts.append)

    assert caught.value.failure.kind is kind
    assert caught.value.partial == partial == "".join(texts)


def test_stream_truncated_before_any_text_has_no_partial() -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=b": keep-alive\n\n")
    )
    with pytest.raises(ProviderError) as caught:
        adapter(transport).complete(REQUEST, timeout=5, on_text=lambda _: None)
    assert caught.value.failure.kind is ErrorKind.NETWORK
    assert "ended before the model finished" in caught.value.failure.detail
    assert caught.value.partial == ""


def test_adapter_repr_names_the_deployment_not_the_key() -> None:
    provider = adapter(replay())
    assert "primary" in repr(provider)
    assert KEY.reveal() not in repr(provider)


def test_content_given_as_typed_parts_keeps_only_the_text_parts() -> None:
    # Mistral's reasoning models send content as a list: thinking parts, then text parts.
    body = {
        "model": "magistral-medium-2509",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "plan..."}]},
                        {"type": "text", "text": "Open Settings > Billing."},
                    ],
                },
                "finish_reason": "stop",
            }
        ],
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    reply = adapter(transport, base_url="https://api.mistral.ai/v1").complete(REQUEST, timeout=5)
    assert reply.text == "Open Settings > Billing."
