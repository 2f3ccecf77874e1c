"""The fault grammar, and fake providers that answer in each provider's real wire format.

Responses are read with plain `json` and string splitting, never with the project's own
parsers, so a shape mistake here cannot be hidden by the same mistake there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import httpx
import pytest

from gateway.answers.handoff import handoff_detail
from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.model import Article, ErrorKind, ProviderError, ProviderKind, Request, Timer
from gateway.providers import local
from gateway.providers.local import NOT_COVERED_REASON
from gateway.seams import Provider
from gateway.secrets.key import Secret
from gateway.simulate import (
    AZURE_API_VERSION,
    GRAMMAR,
    REFUSAL_TEXT,
    SIM_HOST,
    Fault,
    FaultKind,
    SimulatedTransport,
    Step,
    answer_text,
    check_names,
    local_answerer,
    parse_fault,
    parse_faults,
    simulated_deployment,
)
from prompts import WORD_LIMIT, not_covered, rule_breaks

QUESTION = "How do I reset my password?"

OPENAI = Deployment("primary", ProviderKind.OPENAI, 128_000, model="gpt-4o-mini")
AZURE = Deployment("azure-east", ProviderKind.AZURE, 128_000, model="support-chat")
ANTHROPIC = Deployment("fallback", ProviderKind.ANTHROPIC, 200_000, model="claude-haiku-4-5")
GEMINI = Deployment("long", ProviderKind.GEMINI, 1_000_000, model="gemini-2.5-pro")
LOCAL = Deployment("local", ProviderKind.LOCAL, 1_000_000)
ALL = (OPENAI, AZURE, ANTHROPIC, GEMINI, LOCAL)
HTTP = (OPENAI, AZURE, ANTHROPIC, GEMINI)
BY_KIND = {d.provider: d for d in HTTP}


# --------------------------------------------------------------------------- the grammar


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("primary=429x3", Step(FaultKind.STATUS, 3, status=429)),
        ("primary=503x*", Step(FaultKind.STATUS, None, status=503)),
        ("primary=401", Step(FaultKind.STATUS, None, status=401)),
        ("primary=429x3@2s", Step(FaultKind.STATUS, 3, status=429, retry_after=2.0)),
        ("primary=429@500ms", Step(FaultKind.STATUS, None, status=429, retry_after=0.5)),
        ("primary=503x1@1.5s", Step(FaultKind.STATUS, 1, status=503, retry_after=1.5)),
        ("primary=timeout", Step(FaultKind.TIMEOUT)),
        ("primary=timeoutx2", Step(FaultKind.TIMEOUT, 2)),
        ("primary=reset", Step(FaultKind.RESET)),
        ("primary=refusal", Step(FaultKind.REFUSAL)),
        ("primary=blocked", Step(FaultKind.BLOCKED)),
        ("primary=overflow", Step(FaultKind.OVERFLOW)),
        ("primary=quotax1", Step(FaultKind.QUOTA, 1)),
        ("primary=okx2", Step(FaultKind.OK, 2)),
        ("primary=cut:5", Step(FaultKind.CUT, tokens=5)),
        ("primary=cut5", Step(FaultKind.CUT, tokens=5)),
        ("primary=cut:0x2", Step(FaultKind.CUT, 2, tokens=0)),
        (" primary = TIMEOUTx2 ", Step(FaultKind.TIMEOUT, 2)),
        ("primary=slow:12s", Step(FaultKind.SLOW, delay=12.0)),
        ("primary=slow:800msx2", Step(FaultKind.SLOW, 2, delay=0.8)),
        ("primary=stall:3", Step(FaultKind.STALL, tokens=3)),
        ("primary=stall0x1", Step(FaultKind.STALL, 1, tokens=0)),
        ("primary=limit", Step(FaultKind.LIMIT)),
        ("primary=emptyx2", Step(FaultKind.EMPTY, 2)),
    ],
)
def test_every_form_of_spec_parses(text: str, step: Step) -> None:
    name, fault = parse_fault(text)
    assert name == "primary"
    assert fault.steps == (step,)
    # The canonical form reads back to the same fault (the CLI prints it).
    assert parse_fault(f"primary={fault}")[1] == fault


def test_several_specs_apply_in_order_then_the_deployment_recovers() -> None:
    _, fault = parse_fault("primary=503x2,429x1@5s")
    assert [fault.at(n) for n in (1, 2, 3, 4, 5)] == [
        Step(FaultKind.STATUS, 2, status=503),
        Step(FaultKind.STATUS, 2, status=503),
        Step(FaultKind.STATUS, 1, status=429, retry_after=5.0),
        None,
        None,
    ]


def test_a_bare_spec_applies_to_every_call() -> None:
    _, fault = parse_fault("primary=okx1,401")
    assert fault.at(1) is None
    assert all(fault.at(n) == Step(FaultKind.STATUS, status=401) for n in (2, 3, 50))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("primary", "missing '='"),
        ("=429", "no deployment name"),
        ("primary=", "no spec after 'primary='"),
        ("primary=429,,503", "an empty spec between commas"),
        ("primary=4290", "'4290' is not an HTTP error status (400-599)"),
        ("primary=200", "'200' is not an HTTP error status"),
        ("primary=429x0", "the count in '429x0' must be at least 1"),
        ("primary=x3", "'x3' says how many times but not what"),
        ("primary=429@2", "'@2' is not a delay"),
        ("primary=429@soon", "'@soon' is not a delay"),
        ("primary=timeout@2s", "a Retry-After ('@2s') only goes after an HTTP status"),
        ("primary=timout", "unknown fault 'timout' (did you mean 'timeout'?)"),
        ("primary=banana", "unknown fault 'banana'"),
        ("primary=cut", "'cut' needs the number of deltas before the cut"),
        ("primary=stall", "'stall' needs the number of deltas before the stall"),
        ("primary=slow", "'slow' needs how long the first token takes, e.g. slow:12s"),
        ("primary=slow:12", "'slow:12': '12' is not a duration"),
        ("primary=503,429", "'503' applies to every call, so '429' after it would never happen"),
    ],
)
def test_a_bad_spec_names_the_bad_part_and_shows_the_grammar(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_fault(text)
    message = str(caught.value)
    assert says in message
    assert repr(text) in message
    assert GRAMMAR in message


def test_repeated_names_are_joined_in_order() -> None:
    faults = parse_faults(["primary=429x1", "fallback=reset", "primary=503x2"])
    assert str(faults["primary"]) == "429x1,503x2"
    assert str(faults["fallback"]) == "reset"
    with pytest.raises(ValueError, match="would never happen"):
        parse_faults(["primary=429", "primary=503"])


def test_check_names_rejects_unknown_and_offline_deployments() -> None:
    check_names({"primary": parse_fault("p=429")[1]}, ALL)  # fine: no exception
    with pytest.raises(ValueError, match=r"'primry'.*did you mean 'primary'.*primary, azure-east"):
        check_names({"primry": Fault(())}, ALL)
    with pytest.raises(ValueError, match="'local', a local deployment"):
        check_names({"local": Fault(())}, ALL)


# --------------------------------------------------------------------------- addresses


def test_each_deployment_gets_its_own_unresolvable_address() -> None:
    fakes = [simulated_deployment(d) for d in HTTP]
    urls = [httpx.URL(d.base_url or "") for d in fakes]
    assert {u.host for u in urls} == {SIM_HOST}
    assert len({u.path for u in urls}) == len(HTTP)
    assert [d.model for d in fakes] == [d.model for d in HTTP]
    assert simulated_deployment(AZURE).api_version == AZURE_API_VERSION
    pinned = Deployment("az", ProviderKind.AZURE, 1000, model="m", api_version="2025-01-01")
    assert simulated_deployment(pinned).api_version == "2025-01-01"
    assert simulated_deployment(LOCAL) is LOCAL


# --------------------------------------------------------------------------- speaking HTTP


@dataclass
class Sim:
    transport: SimulatedTransport
    clock: VirtualClock
    client: httpx.Client

    def request(
        self,
        d: Deployment,
        *,
        stream: bool = False,
        question: str = QUESTION,
        sse: bool = True,
    ) -> httpx.Request:
        """The request that provider's real SDK would send."""
        base = simulated_deployment(d).base_url
        system = "You are a support assistant."
        params: dict[str, str] = {}
        body: dict[str, object]
        if d.provider in (ProviderKind.OPENAI, ProviderKind.AZURE):
            body = {
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": question},
                ],
                "max_completion_tokens": 400,
                "stream": stream,
            }
            if stream:
                body["stream_options"] = {"include_usage": True}
            if d.provider is ProviderKind.OPENAI:
                url = f"{base}/chat/completions"
                body["model"] = d.model
            else:
                url = f"{base}/openai/deployments/{d.model}/chat/completions"
                params["api-version"] = AZURE_API_VERSION
        elif d.provider is ProviderKind.ANTHROPIC:
            url = f"{base}/v1/messages"
            body = {
                "model": d.model,
                "system": system,
                "max_tokens": 400,
                "messages": [{"role": "user", "content": question}],
                "stream": stream,
            }
        else:
            method = "streamGenerateContent" if stream else "generateContent"
            url = f"{base}/models/{d.model}:{method}"
            if stream and sse:
                params["alt"] = "sse"
            body = {
                "systemInstruction": {"parts": [{"text": system}]},
                "contents": [{"role": "user", "parts": [{"text": question}]}],
                "generationConfig": {"maxOutputTokens": 400},
            }
        return self.client.build_request("POST", url, json=body, params=params)

    def send(self, d: Deployment, **kw: object) -> httpx.Response:
        return self.client.send(self.request(d, **kw))  # type: ignore[arg-type]


def make_sim(*specs: str, timeout: float = 20.0) -> Sim:
    clock = VirtualClock()
    transport = SimulatedTransport(ALL, parse_faults(specs), clock=clock)
    return Sim(transport, clock, httpx.Client(transport=transport, timeout=timeout))


def spec(d: Deployment, what: str) -> str:
    return f"{d.name}={what}"


# --- reading a response with nothing but json and str.split


def sse_frames(raw: str, d: Deployment) -> list[tuple[str | None, str]]:
    """(event name, data) per frame, in the separator that provider uses."""
    sep = "\r\n" if d.provider is ProviderKind.GEMINI else "\n"
    assert raw.endswith(sep * 2), "every frame ends with a blank line"
    frames = []
    for block in raw.split(sep * 2)[:-1]:
        event = None
        data = []
        for line in block.split(sep):
            name, _, value = line.partition(": ")
            if name == "event":
                event = value
            else:
                assert name == "data", line
                data.append(value)
        frames.append((event, "\n".join(data)))
    return frames


def text_of(d: Deployment, body: dict[str, object]) -> str:
    """The answer text out of a non-streamed reply, where that provider puts it."""
    b: dict = body  # type: ignore[type-arg]
    if d.provider in (ProviderKind.OPENAI, ProviderKind.AZURE):
        return str(b["choices"][0]["message"]["content"])
    if d.provider is ProviderKind.ANTHROPIC:
        return "".join(block["text"] for block in b["content"] if block["type"] == "text")
    return "".join(p["text"] for p in b["candidates"][0]["content"]["parts"])


def deltas_of(
    d: Deployment, frames: list[tuple[str | None, str]], field: str = "content"
) -> list[str]:
    """The text deltas of a stream, in order."""
    out: list[str] = []
    for event, data in frames:
        if data == "[DONE]":
            continue
        chunk = json.loads(data)
        if d.provider in (ProviderKind.OPENAI, ProviderKind.AZURE):
            out += [c["delta"][field] for c in chunk["choices"] if c["delta"].get(field)]
        elif d.provider is ProviderKind.ANTHROPIC:
            assert chunk["type"] == event, "Anthropic's data type repeats the event name"
            if event == "content_block_delta":
                out.append(chunk["delta"]["text"])
        else:
            for candidate in chunk.get("candidates", []):
                out += [p["text"] for p in candidate.get("content", {}).get("parts", [])]
    return [t for t in out if t]


def read_until_dropped(response: httpx.Response) -> tuple[str, BaseException | None]:
    raw = b""
    try:
        for chunk in response.iter_bytes():
            raw += chunk
    except httpx.HTTPError as exc:
        return raw.decode(), exc
    return raw.decode(), None


# --------------------------------------------------------------------------- answers


def test_answer_names_the_deployment_and_the_question_and_never_varies() -> None:
    text = answer_text("primary", "  How do I\nreset my password? ")
    assert text.startswith("[primary] ")
    assert "“How do I reset my password?”" in text
    assert text == answer_text("primary", "How do I reset my password?")
    long = answer_text("p", "word " * 100)
    assert "..." in long and len(long) < 300


def test_openai_reply_is_a_chat_completion() -> None:
    sim = make_sim()
    r = sim.send(OPENAI)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = json.loads(r.content)
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert body["model"] == "gpt-4o-mini"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["refusal"] is None
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"] == answer_text("primary", QUESTION)
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert "x-request-id" in r.headers


def test_azure_reply_adds_content_filter_results() -> None:
    body = json.loads(make_sim().send(AZURE).content)
    assert body["object"] == "chat.completion"
    assert body["prompt_filter_results"][0]["content_filter_results"]["hate"]["filtered"] is False
    choice = body["choices"][0]
    assert choice["content_filter_results"]["violence"]["filtered"] is False
    assert choice["message"]["content"] == answer_text("azure-east", QUESTION)


def test_anthropic_reply_is_a_message() -> None:
    r = make_sim().send(ANTHROPIC)
    body = json.loads(r.content)
    assert body["type"] == "message"
    assert body["id"].startswith("msg_")
    assert body["role"] == "assistant"
    assert body["stop_reason"] == "end_turn"
    assert body["content"] == [{"type": "text", "text": answer_text("fallback", QUESTION)}]
    assert body["usage"]["input_tokens"] > 0 < body["usage"]["output_tokens"]
    assert r.headers["request-id"]


def test_gemini_reply_is_a_generate_content_response() -> None:
    body = json.loads(make_sim().send(GEMINI).content)
    candidate = body["candidates"][0]
    assert candidate["finishReason"] == "STOP"
    assert candidate["content"]["role"] == "model"
    assert candidate["content"]["parts"] == [{"text": answer_text("long", QUESTION)}]
    usage = body["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]
    assert body["modelVersion"] == "gemini-2.5-pro"


def test_question_is_read_from_content_parts_too() -> None:
    sim = make_sim()
    request = sim.client.build_request(
        "POST",
        f"{simulated_deployment(OPENAI).base_url}/chat/completions",
        json={
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Refunds?"}]}],
        },
    )
    body = json.loads(sim.client.send(request).content)
    assert "“Refunds?”" in body["choices"][0]["message"]["content"]


# --------------------------------------------------------------------------- streams


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_stream_reassembles_to_the_whole_answer(d: Deployment) -> None:
    r = make_sim().send(d, stream=True)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    frames = sse_frames(r.text, d)
    deltas = deltas_of(d, frames)
    assert len(deltas) > 5, "the answer arrives in many deltas, not one"
    assert "".join(deltas) == answer_text(d.name, QUESTION)


def test_openai_stream_ends_with_a_finish_reason_then_usage_then_done() -> None:
    frames = sse_frames(make_sim().send(OPENAI, stream=True).text, OPENAI)
    assert all(event is None for event, _ in frames), "OpenAI names no events"
    assert frames[-1][1] == "[DONE]"
    chunks = [json.loads(data) for _, data in frames[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finish = chunks[-2]["choices"][0]
    assert finish["finish_reason"] == "stop" and finish["delta"] == {}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_openai_usage_chunk_comes_only_when_asked_for() -> None:
    sim = make_sim()
    request = sim.request(OPENAI, stream=True)
    body = json.loads(request.content)
    del body["stream_options"]
    plain = sim.client.post(str(request.url), json=body)
    chunks = [json.loads(d) for _, d in sse_frames(plain.text, OPENAI) if d != "[DONE]"]
    assert all(c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_azure_stream_starts_with_an_empty_choices_chunk() -> None:
    frames = sse_frames(make_sim().send(AZURE, stream=True).text, AZURE)
    first = json.loads(frames[0][1])
    assert first["choices"] == []
    assert first["prompt_filter_results"][0]["prompt_index"] == 0
    assert frames[-1][1] == "[DONE]"


def test_anthropic_stream_is_the_named_event_sequence() -> None:
    frames = sse_frames(make_sim().send(ANTHROPIC, stream=True).text, ANTHROPIC)
    events = [event for event, _ in frames]
    assert events[:3] == ["message_start", "content_block_start", "ping"]
    assert set(events[3:-3]) == {"content_block_delta"}
    assert events[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    start = json.loads(frames[0][1])["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    delta = json.loads(frames[-2][1])
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] == len(events) - 6


def test_gemini_stream_uses_crlf_frames_and_ends_at_eof_with_a_finish_reason() -> None:
    raw = make_sim().send(GEMINI, stream=True).text
    assert "[DONE]" not in raw
    assert raw.count("\r\n\r\n") == raw.count("data: ")
    chunks = [json.loads(data) for _, data in sse_frames(raw, GEMINI)]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == len(chunks) - 1


def test_gemini_stream_without_alt_sse_is_one_json_array() -> None:
    r = make_sim().send(GEMINI, stream=True, sse=False)
    chunks = json.loads(r.content)
    assert isinstance(chunks, list)
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == answer_text("long", QUESTION)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


# --------------------------------------------------------------------------- errors


def _error(d: Deployment, what: str) -> tuple[httpx.Response, dict]:  # type: ignore[type-arg]
    r = make_sim(spec(d, what)).send(d)
    return r, json.loads(r.content)


@pytest.mark.parametrize(
    ("what", "status", "type_", "code"),
    [
        ("400", 400, "invalid_request_error", "unsupported_parameter"),
        ("401", 401, "invalid_request_error", "invalid_api_key"),
        ("404", 404, "invalid_request_error", "model_not_found"),
        ("429", 429, "requests", "rate_limit_exceeded"),
        ("500", 500, "server_error", None),
        ("503", 503, "service_unavailable_error", "server_is_overloaded"),
        ("overflow", 400, "invalid_request_error", "context_length_exceeded"),
        ("quota", 429, "insufficient_quota", "insufficient_quota"),
        ("blocked", 400, "invalid_request_error", "invalid_prompt"),
    ],
)
def test_openai_errors(what: str, status: int, type_: str, code: str | None) -> None:
    r, body = _error(OPENAI, what)
    assert r.status_code == status
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert (body["error"]["type"], body["error"]["code"]) == (type_, code)
    assert body["error"]["message"]


def test_openai_404_and_overflow_name_the_model_and_window() -> None:
    assert "`gpt-4o-mini`" in _error(OPENAI, "404")[1]["error"]["message"]
    overflow = _error(OPENAI, "overflow")[1]["error"]
    assert overflow["param"] == "messages"
    window, used = map(int, re.findall(r"\d+", overflow["message"]))
    assert window == 128_000 < used


def test_openai_429_carries_rate_limit_headers() -> None:
    r, _ = _error(OPENAI, "429")
    assert r.headers["x-ratelimit-remaining-requests"] == "0"
    assert re.fullmatch(r"\d+(ms|s)", r.headers["x-ratelimit-reset-requests"])


@pytest.mark.parametrize(
    ("what", "status", "code"),
    [
        ("401", 401, "401"),
        ("404", 404, "DeploymentNotFound"),
        ("429", 429, "429"),
        ("503", 503, "503"),
        ("overflow", 400, "context_length_exceeded"),
        ("blocked", 400, "content_filter"),
    ],
)
def test_azure_errors_use_string_codes(what: str, status: int, code: str) -> None:
    r, body = _error(AZURE, what)
    assert r.status_code == status
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["code"], str)


def test_azure_blocked_prompt_says_which_filter() -> None:
    error = _error(AZURE, "blocked")[1]["error"]
    assert error["innererror"]["code"] == "ResponsibleAIPolicyViolation"
    results = error["innererror"]["content_filter_result"]
    assert any(v["filtered"] for v in results.values())


def test_azure_quota_says_wait_a_day() -> None:
    r, body = _error(AZURE, "quota")
    assert r.status_code == 429
    assert r.headers["retry-after"] == "86400"
    assert "retry after 86400 seconds" in body["error"]["message"]


@pytest.mark.parametrize(
    ("what", "status", "type_"),
    [
        ("400", 400, "invalid_request_error"),
        ("401", 401, "authentication_error"),
        ("404", 404, "not_found_error"),
        ("429", 429, "rate_limit_error"),
        ("500", 500, "api_error"),
        ("529", 529, "overloaded_error"),
        ("overflow", 400, "invalid_request_error"),
        ("quota", 400, "invalid_request_error"),
    ],
)
def test_anthropic_errors(what: str, status: int, type_: str) -> None:
    r, body = _error(ANTHROPIC, what)
    assert r.status_code == status
    assert body["type"] == "error"
    assert body["error"]["type"] == type_
    assert body["request_id"] == r.headers["request-id"]


def test_anthropic_overflow_and_quota_speak_only_through_the_message() -> None:
    message = _error(ANTHROPIC, "overflow")[1]["error"]["message"]
    match = re.fullmatch(r"prompt is too long: (\d+) tokens > (\d+) maximum", message)
    assert match and int(match[2]) == 200_000 < int(match[1])
    assert "credit balance is too low" in _error(ANTHROPIC, "quota")[1]["error"]["message"]
    assert _error(ANTHROPIC, "404")[1]["error"]["message"] == "model: claude-haiku-4-5"


@pytest.mark.parametrize(
    ("what", "status", "rpc"),
    [
        ("400", 400, "INVALID_ARGUMENT"),
        ("403", 403, "PERMISSION_DENIED"),
        ("404", 404, "NOT_FOUND"),
        ("429", 429, "RESOURCE_EXHAUSTED"),
        ("500", 500, "INTERNAL"),
        ("503", 503, "UNAVAILABLE"),
        ("504", 504, "DEADLINE_EXCEEDED"),
        ("overflow", 400, "INVALID_ARGUMENT"),
        ("quota", 429, "RESOURCE_EXHAUSTED"),
    ],
)
def test_gemini_errors(what: str, status: int, rpc: str) -> None:
    r, body = _error(GEMINI, what)
    assert r.status_code == status
    assert body["error"]["code"] == status
    assert body["error"]["status"] == rpc


def test_gemini_reports_a_bad_key_as_400_api_key_invalid() -> None:
    r, body = _error(GEMINI, "401")
    assert r.status_code == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    reasons = [d.get("reason") for d in body["error"]["details"]]
    assert "API_KEY_INVALID" in reasons


def test_gemini_rate_limit_and_daily_quota_differ_by_quota_id() -> None:
    def quota_ids(what: str) -> list[str]:
        details = _error(GEMINI, what)[1]["error"]["details"]
        return [v["quotaId"] for d in details for v in d.get("violations", [])]

    assert ["PerMinute" in q for q in quota_ids("429")] == [True]
    assert ["PerDay" in q for q in quota_ids("quota")] == [True]


def test_gemini_overflow_message() -> None:
    message = _error(GEMINI, "overflow")[1]["error"]["message"]
    match = re.fullmatch(
        r"The input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)\.",
        message,
    )
    assert match and int(match[2]) == 1_000_000 < int(match[1])


# --- Retry-After goes where each provider puts it


@pytest.mark.parametrize(
    ("d", "delay", "retry_after", "retry_after_ms"),
    [
        (OPENAI, "2s", "2", "2000"),
        (OPENAI, "500ms", "1", "500"),
        (AZURE, "2s", "2", "2000"),
        (AZURE, "1500ms", "2", "1500"),
        (ANTHROPIC, "2s", "2", None),
        (ANTHROPIC, "1500ms", "2", None),  # whole seconds only, rounded up
    ],
    ids=lambda v: getattr(getattr(v, "provider", None), "value", str(v)),
)
def test_retry_after_headers(
    d: Deployment, delay: str, retry_after: str, retry_after_ms: str | None
) -> None:
    r, _ = _error(d, f"429@{delay}")
    assert r.headers["retry-after"] == retry_after
    assert r.headers.get("retry-after-ms") == retry_after_ms


def test_openai_and_azure_messages_also_say_when_to_retry() -> None:
    assert "Please try again in 500ms." in _error(OPENAI, "429@500ms")[1]["error"]["message"]
    assert "Please retry after 2 seconds." in _error(AZURE, "429@2s")[1]["error"]["message"]


@pytest.mark.parametrize(("delay", "retry_delay"), [("2s", "2s"), ("500ms", "0.5s")])
def test_gemini_retry_delay_is_in_the_body(delay: str, retry_delay: str) -> None:
    r, body = _error(GEMINI, f"429@{delay}")
    assert "retry-after" not in r.headers
    infos = [d for d in body["error"]["details"] if d["@type"].endswith("google.rpc.RetryInfo")]
    assert infos == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
    ]
    assert f"Please retry in {retry_delay}." in body["error"]["message"]


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_no_retry_hint_unless_asked_for(d: Deployment) -> None:
    r, _ = _error(d, "429")
    assert "retry-after" not in r.headers
    assert "RetryInfo" not in r.text
    assert "try again in" not in r.text and "retry after" not in r.text.lower()


# --------------------------------------------------------------------------- refusals


def test_openai_refusal_is_the_refusal_field() -> None:
    body = json.loads(make_sim(spec(OPENAI, "refusal")).send(OPENAI).content)
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["refusal"] == REFUSAL_TEXT
    assert body["choices"][0]["finish_reason"] == "stop"


def test_openai_streamed_refusal_arrives_in_refusal_deltas() -> None:
    r = make_sim(spec(OPENAI, "refusal")).send(OPENAI, stream=True)
    frames = sse_frames(r.text, OPENAI)
    assert "".join(deltas_of(OPENAI, frames, "refusal")) == REFUSAL_TEXT
    assert deltas_of(OPENAI, frames) == []
    assert frames[-1][1] == "[DONE]"


@pytest.mark.parametrize("stream", [False, True])
def test_azure_refusal_is_finish_reason_content_filter(stream: bool) -> None:
    r = make_sim(spec(AZURE, "refusal")).send(AZURE, stream=stream)
    assert r.status_code == 200
    if stream:
        chunks = [json.loads(x) for _, x in sse_frames(r.text, AZURE) if x != "[DONE]"]
        finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"]]
        assert finishes[-1] == "content_filter"
    else:
        choice = json.loads(r.content)["choices"][0]
        assert choice["finish_reason"] == "content_filter"
        assert choice["message"]["content"] is None
        assert choice["content_filter_results"]["violence"]["filtered"] is True


@pytest.mark.parametrize("what", ["refusal", "blocked"])
def test_anthropic_refusal_is_stop_reason_refusal(what: str) -> None:
    body = json.loads(make_sim(spec(ANTHROPIC, what)).send(ANTHROPIC).content)
    assert body["stop_reason"] == "refusal"
    assert body["stop_details"]["type"] == "refusal"
    frames = sse_frames(
        make_sim(spec(ANTHROPIC, what)).send(ANTHROPIC, stream=True).text, ANTHROPIC
    )
    assert json.loads(frames[-2][1])["delta"]["stop_reason"] == "refusal"
    assert frames[-1][0] == "message_stop"


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_refusal_is_finish_reason_safety(stream: bool) -> None:
    r = make_sim(spec(GEMINI, "refusal")).send(GEMINI, stream=stream)
    body = json.loads(sse_frames(r.text, GEMINI)[-1][1] if stream else r.content)
    candidate = body["candidates"][0]
    assert candidate["finishReason"] == "SAFETY"
    assert "content" not in candidate
    assert any(rating.get("blocked") for rating in candidate["safetyRatings"])


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_blocked_prompt_has_block_reason_and_no_candidates(stream: bool) -> None:
    r = make_sim(spec(GEMINI, "blocked")).send(GEMINI, stream=stream)
    assert r.status_code == 200
    body = json.loads(sse_frames(r.text, GEMINI)[-1][1] if stream else r.content)
    assert body["promptFeedback"]["blockReason"] == "SAFETY"
    assert "candidates" not in body


# --------------------------------------------------------------------------- dropped connections


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("what", ["reset", "cut:3"])
def test_reset_and_unstreamed_cut_drop_the_connection_before_any_byte(
    d: Deployment, what: str
) -> None:
    sim = make_sim(spec(d, what))
    with pytest.raises(httpx.RemoteProtocolError, match="Server disconnected"):
        sim.send(d)
    assert sim.transport.calls[d.name] == 1


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_cut_stream_sends_n_deltas_then_drops(d: Deployment) -> None:
    sim = make_sim(spec(d, "cut:3"))
    response = sim.client.send(sim.request(d, stream=True), stream=True)
    assert response.status_code == 200
    raw, dropped = read_until_dropped(response)
    assert isinstance(dropped, httpx.RemoteProtocolError)
    deltas = deltas_of(d, sse_frames(raw, d))
    full = answer_text(d.name, QUESTION)
    assert len(deltas) == 3
    assert full.startswith("".join(deltas))
    for marker in ("[DONE]", "message_stop", "finishReason", 'finish_reason":"stop'):
        assert marker not in raw


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_cut_past_the_last_delta_still_loses_the_terminal_marker(d: Deployment) -> None:
    sim = make_sim(spec(d, "cut:1000"))
    response = sim.client.send(sim.request(d, stream=True), stream=True)
    raw, dropped = read_until_dropped(response)
    assert dropped is not None
    assert "".join(deltas_of(d, sse_frames(raw, d))) == answer_text(d.name, QUESTION)
    assert "[DONE]" not in raw and "message_stop" not in raw and "STOP" not in raw


# --------------------------------------------------------------------------- timeouts


def test_timeout_in_virtual_time_advances_the_clock_without_sleeping() -> None:
    sim = make_sim(spec(OPENAI, "timeoutx1"), timeout=7.5)
    with pytest.raises(httpx.ReadTimeout):
        sim.send(OPENAI)
    assert sim.clock.monotonic() == 7.5
    assert sim.clock.slept == [], "the engine chose no wait: none is recorded as one"
    assert sim.send(OPENAI).status_code == 200, "one timeout, then the deployment answers"
    assert sim.clock.monotonic() == 7.5


class RecordingClock:
    """A real-time stand-in that records waits instead of taking them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return 0.0

    def wall(self) -> float:
        return 1_700_000_000.0

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_timeout_in_real_time_waits_for_the_read_timeout() -> None:
    clock = RecordingClock()
    transport = SimulatedTransport(ALL, parse_faults(["long=timeout"]), clock=clock)
    client = httpx.Client(transport=transport, timeout=httpx.Timeout(3.0, read=4.25))
    sim = Sim(transport, VirtualClock(), client)
    with pytest.raises(httpx.ReadTimeout):
        sim.send(GEMINI)
    assert clock.waits == [4.25]


# --------------------------------------------------------------------------- schedules and routing


def test_calls_are_counted_per_deployment_and_faults_follow_the_count() -> None:
    sim = make_sim("primary=503x2", "fallback=okx1,529x1")
    assert [sim.send(OPENAI).status_code for _ in range(3)] == [503, 503, 200]
    assert [sim.send(ANTHROPIC).status_code for _ in range(3)] == [200, 529, 200]
    assert sim.send(GEMINI).status_code == 200
    assert sim.transport.calls == {"primary": 3, "azure-east": 0, "fallback": 3, "long": 1}


def test_requests_outside_the_simulation_fail_like_an_unknown_host() -> None:
    sim = make_sim()
    with pytest.raises(httpx.ConnectError, match="no deployment"):
        sim.client.post("https://api.openai.com/v1/chat/completions", json={})
    with pytest.raises(httpx.ConnectError, match="no deployment"):
        sim.client.post(f"https://{SIM_HOST}/local/v1/chat/completions", json={})
    assert set(sim.transport.calls.values()) == {0}


MISTAKES = [
    (OPENAI, "/completions", {"model": "m"}, 404, "Invalid URL"),
    (OPENAI, "/chat/completions", {"model": "m"}, 400, "Missing required parameter: 'messages'"),
    (ANTHROPIC, "/v1/messages", {"model": "m", "messages": []}, 400, "max_tokens: Field required"),
    (ANTHROPIC, "/v1/complete", {}, 404, "not_found_error"),
    (
        GEMINI,
        "/models/gemini-2.5-pro:generateContent",
        {"contents": [1], "max_tokens": 5},
        400,
        'Unknown name \\"max_tokens\\"',
    ),
    (
        GEMINI,
        "/models/gemini-pro:generateContent",
        {"contents": [1]},
        404,
        "gemini-pro is not found",
    ),
    (AZURE, "/openai/deployments/support-chat/chat/completions", {}, 404, "Resource not found"),
    (AZURE, "/openai/deployments/x/chat/completions?api-version=1", {}, 404, "DeploymentNotFound"),
]


def test_gemini_model_may_be_named_with_its_models_prefix() -> None:
    prefixed = Deployment("g", ProviderKind.GEMINI, 1_000_000, model="models/gemini-2.5-flash")
    transport = SimulatedTransport([prefixed], clock=VirtualClock())
    client = httpx.Client(transport=transport)
    url = f"{simulated_deployment(prefixed).base_url}/models/gemini-2.5-flash:generateContent"
    assert client.post(url, json={"contents": [{"role": "user", "parts": []}]}).status_code == 200


@pytest.mark.parametrize(("d", "path", "body", "status", "says"), MISTAKES)
def test_a_malformed_request_gets_the_real_servers_answer(
    d: Deployment, path: str, body: dict[str, object], status: int, says: str
) -> None:
    sim = make_sim()
    r = sim.client.post(f"{simulated_deployment(d).base_url}{path}", json=body)
    assert r.status_code == status
    assert says in r.text


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_body_that_is_not_json_is_a_400(d: Deployment) -> None:
    sim = make_sim()
    good = sim.request(d)
    bad = httpx.Request("POST", good.url, content=b"{not json", headers=good.headers)
    assert sim.client.send(bad).status_code == 400


# --------------------------------------------------------------------------- through the classifier


def _classified(d: Deployment, what: str) -> object:
    errors = pytest.importorskip("gateway.classify.errors")
    r = make_sim(spec(d, what)).send(d)
    return errors.classify_response(r.status_code, r.headers, r.content, now=1_700_000_000.0)


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize(
    ("what", "kind", "retry_after"),
    [
        ("400", "bad_request", None),
        ("401", "auth", None),
        ("404", "model_not_found", None),
        ("429@2s", "rate_limit", 2.0),
        ("503", "overloaded", None),
        ("500", "server", None),
        ("overflow", "context_window", None),
    ],
)
def test_every_simulated_error_classifies_as_the_user_would_expect(
    d: Deployment, what: str, kind: str, retry_after: float | None
) -> None:
    failure = _classified(d, what)
    assert str(failure.kind) == kind  # type: ignore[attr-defined]
    assert failure.retry_after == retry_after  # type: ignore[attr-defined]


@pytest.mark.parametrize("d", (OPENAI, ANTHROPIC, GEMINI), ids=lambda d: d.provider.value)
def test_simulated_quota_classifies_as_quota(d: Deployment) -> None:
    assert str(_classified(d, "quota").kind) == "quota"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- through the adapters

ADAPTER_MODULES = {
    ProviderKind.OPENAI: "gateway.providers.openai",
    ProviderKind.AZURE: "gateway.providers.azure",
    ProviderKind.ANTHROPIC: "gateway.providers.anthropic",
    ProviderKind.GEMINI: "gateway.providers.gemini",
}
ASK = Request(system="You are a support assistant.", question=QUESTION, max_output_tokens=400)


def adapter(d: Deployment, *specs: str) -> tuple[Provider, SimulatedTransport, VirtualClock]:
    """The real adapter for `d`, talking to the simulator; skipped until the adapter exists."""
    pytest.importorskip(ADAPTER_MODULES[d.provider])
    from gateway.providers import build_provider

    clock = VirtualClock()
    transport = SimulatedTransport(ALL, parse_faults(specs), clock=clock)
    provider = build_provider(
        simulated_deployment(d), Secret("sk-simulated"), transport=transport, clock=clock
    )
    return provider, transport, clock


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_adapter_round_trips_an_answer(d: Deployment, stream: bool) -> None:
    provider, transport, _ = adapter(d)
    deltas: list[str] = []
    reply = provider.complete(ASK, timeout=10, on_text=deltas.append if stream else None)
    assert reply.text == answer_text(d.name, QUESTION)
    assert not reply.refused
    assert ("".join(deltas), len(deltas) > 5) == ((reply.text, True) if stream else ("", False))
    assert transport.calls[d.name] == 1


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_adapter_reads_a_rate_limit_and_its_retry_after(d: Deployment, stream: bool) -> None:
    provider, _, _ = adapter(d, spec(d, "429x1@3s"))
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=10, on_text=(lambda _: None) if stream else None)
    assert caught.value.failure.kind is ErrorKind.RATE_LIMIT
    assert caught.value.failure.retry_after == 3.0
    assert provider.complete(ASK, timeout=10).text == answer_text(d.name, QUESTION)


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_adapter_returns_a_refusal_as_a_refused_reply(d: Deployment, stream: bool) -> None:
    provider, _, _ = adapter(d, spec(d, "refusal"))
    reply = provider.complete(ASK, timeout=10, on_text=(lambda _: None) if stream else None)
    assert reply.refused
    assert reply.text.strip()


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_adapter_reports_a_cut_stream_with_the_text_already_sent(d: Deployment) -> None:
    provider, _, _ = adapter(d, spec(d, "cut:4"))
    deltas: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=10, on_text=deltas.append)
    assert len(deltas) == 4
    assert caught.value.partial == "".join(deltas)
    assert answer_text(d.name, QUESTION).startswith(caught.value.partial)
    assert caught.value.failure.kind is ErrorKind.NETWORK


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_adapter_times_out_in_virtual_time(d: Deployment) -> None:
    provider, _, clock = adapter(d, spec(d, "timeout"))
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=12)
    assert caught.value.failure.kind is ErrorKind.TIMEOUT
    assert clock.monotonic() == 12


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_slow_first_token_meets_the_first_token_deadline_exactly(
    d: Deployment, stream: bool
) -> None:
    provider, _, clock = adapter(d, spec(d, "slow:12sx1"))
    shown: list[str] = []
    on_text = shown.append if stream else None
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=20, on_text=on_text, first_token=10, stall=5)
    assert caught.value.failure.timer is Timer.FIRST_TOKEN
    assert clock.monotonic() == 10, "given up at the deadline, not when the token came"
    assert shown == []
    # the last deployment left is never cut off: it waits the 12 s and answers
    reply = provider.complete(ASK, timeout=20, on_text=on_text, stall=5)
    assert reply.text == answer_text(d.name, QUESTION)


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_slow_first_token_inside_the_deadline_is_just_slow(d: Deployment) -> None:
    provider, _, clock = adapter(d, spec(d, "slow:3s"))
    reply = provider.complete(ASK, timeout=20, on_text=lambda _: None, first_token=10, stall=5)
    assert reply.text == answer_text(d.name, QUESTION)
    assert clock.monotonic() == 3


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_stall_after_text_ends_at_the_stall_deadline(d: Deployment) -> None:
    provider, _, clock = adapter(d, spec(d, "stall:3"))
    shown: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=20, on_text=shown.append, first_token=10, stall=5)
    assert caught.value.failure.timer is Timer.STALL
    assert clock.monotonic() == 5
    assert len(shown) == 3 and caught.value.partial == "".join(shown)


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_whole_reply_that_stalls_after_its_headers_is_a_stall_with_nothing_shown(
    d: Deployment,
) -> None:
    provider, _, clock = adapter(d, spec(d, "stall:0"))
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=20, first_token=10, stall=5)
    assert caught.value.failure.timer is Timer.STALL
    assert not caught.value.failure.silent
    assert clock.monotonic() == 5


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_a_silent_server_is_given_up_on_at_the_first_deadline_due(d: Deployment) -> None:
    provider, _, clock = adapter(d, spec(d, "timeout"))
    with pytest.raises(ProviderError) as caught:
        provider.complete(ASK, timeout=20, first_token=10, stall=5)
    assert caught.value.failure.timer is Timer.FIRST_TOKEN
    assert caught.value.failure.silent
    assert clock.monotonic() == 10


CUT_REASON = {
    ProviderKind.OPENAI: "length",
    ProviderKind.AZURE: "length",
    ProviderKind.ANTHROPIC: "max_tokens",
    ProviderKind.GEMINI: "MAX_TOKENS",
}


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_cut_short_by_the_output_limit_says_so(d: Deployment, stream: bool) -> None:
    provider, _, _ = adapter(d, spec(d, "limit"))
    shown: list[str] = []
    reply = provider.complete(ASK, timeout=10, on_text=shown.append if stream else None)
    assert reply.cut_short is ErrorKind.OUTPUT_LIMIT
    assert reply.finish_reason == CUT_REASON[d.provider]  # as the provider sent it
    whole = answer_text(d.name, QUESTION)
    assert reply.text and whole.startswith(reply.text) and reply.text != whole
    assert "".join(shown) == (reply.text if stream else "")


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_empty_answer_has_no_text_and_is_not_cut_short(d: Deployment, stream: bool) -> None:
    provider, _, _ = adapter(d, spec(d, "empty"))
    shown: list[str] = []
    reply = provider.complete(ASK, timeout=10, on_text=shown.append if stream else None)
    assert (reply.text.strip(), reply.cut_short, reply.refused) == ("", None, False)
    assert shown == []


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_blocked_prompt_is_the_providers_refusal_and_nothing_is_streamed(
    d: Deployment, stream: bool
) -> None:
    provider, _, _ = adapter(d, spec(d, "blocked"))
    shown: list[str] = []
    try:
        reply = provider.complete(ASK, timeout=10, on_text=shown.append if stream else None)
    except ProviderError as err:  # OpenAI and Azure block with a 400
        assert d.provider in (ProviderKind.OPENAI, ProviderKind.AZURE)
        assert err.failure.kind is ErrorKind.REFUSAL
    else:
        assert reply.refused
        # Gemini's promptFeedback is its filter; Anthropic has none and the model refuses.
        assert reply.filtered is (d.provider is ProviderKind.GEMINI)
        if reply.filtered:
            assert shown == []
    if d.provider is not ProviderKind.ANTHROPIC:
        assert shown == []


# --------------------------------------------------------------------------- realistic answers

PASSWORD = Article(
    "Resetting your password",
    "account/resetting-your-password.md",
    "# Resetting your password\n\nOpen the sign-in page and choose Forgot password. We email"
    " a reset link that works for 30 minutes.\n",
)
INVOICES = Article(
    "Invoices",
    "billing/invoices.md",
    "# Invoices\n\nDownload every invoice as a PDF from Settings, then Billing.\n",
)
# One section far longer than the word limit, in one-word sentences, so that the offline
# answer fills the limit exactly and the tag would push it over.
LONG = Article(
    "Exporting your data",
    "data/export.md",
    "# Exporting your data\n\n" + " ".join(["Exports."] * 200),
)
KB = (PASSWORD, INVOICES, LONG)


def test_local_answerer_answers_from_the_matching_article_or_says_not_covered() -> None:
    answer = local_answerer(KB, "Acme Cloud")
    assert "Forgot password" in answer(QUESTION)
    assert "PDF" in answer("Where do I download an invoice?")
    handoff = answer("Do you sell gift cards?")
    assert handoff_detail(handoff, "Acme Cloud") == NOT_COVERED_REASON
    assert handoff.endswith("\n" + not_covered("Acme Cloud"))


def test_local_answerer_cites_the_article_it_answers_from_by_its_marker() -> None:
    answer = local_answerer(KB, "Acme Cloud")
    assert answer(QUESTION).endswith(" [1]")  # PASSWORD is the first article sent
    assert answer("Where do I download an invoice?").endswith(" [2]")


def test_a_tagged_local_answer_keeps_to_the_prompts_rules() -> None:
    answer = local_answerer(KB, "Acme Cloud")
    for question in (QUESTION, "How do I export my data?", "Gift cards?"):
        tagged = f"[primary] {answer(question)}"
        assert rule_breaks(tagged) == ()
    question = "How do I export my data?"
    untagged = local.answer(Request("", question, 400, KB, "Acme Cloud"))
    assert len(untagged.split()) <= WORD_LIMIT
    assert len(f"[primary] {answer(question)}".split()) <= WORD_LIMIT
    assert answer(question).endswith(" [3]"), "within the limit, the citation kept"


def _answering_sim(*specs: str) -> Sim:
    clock = VirtualClock()
    transport = SimulatedTransport(
        ALL, parse_faults(specs), clock=clock, answerer=local_answerer(KB, "Acme Cloud")
    )
    return Sim(transport, clock, httpx.Client(transport=transport, timeout=20.0))


@pytest.mark.parametrize("d", HTTP, ids=lambda d: d.provider.value)
def test_with_an_answerer_every_provider_answers_the_question_tagged_with_its_name(
    d: Deployment,
) -> None:
    sim = _answering_sim()
    expected = f"[{d.name}] " + local_answerer(KB, "Acme Cloud")(QUESTION)
    assert text_of(d, json.loads(sim.send(d).content)) == expected
    streamed = deltas_of(d, sse_frames(sim.send(d, stream=True).text, d))
    assert "".join(streamed) == expected
    other = text_of(d, json.loads(sim.send(d, question="Gift cards?").content))
    # A handoff keeps its marker first; the tag joins its reason.
    assert handoff_detail(other, "Acme Cloud") == f"[{d.name}] {NOT_COVERED_REASON}"
    assert other.endswith("\n" + not_covered("Acme Cloud"))


def test_with_an_answerer_a_cut_stream_drops_part_way_through_that_answer() -> None:
    sim = _answering_sim(spec(ANTHROPIC, "cut:5"))
    response = sim.client.send(sim.request(ANTHROPIC, stream=True), stream=True)
    raw, dropped = read_until_dropped(response)
    assert dropped is not None
    sent = "".join(deltas_of(ANTHROPIC, sse_frames(raw, ANTHROPIC)))
    assert sent == "[fallback] From “Resetting your password”:"


def test_with_an_answerer_faults_still_apply() -> None:
    sim = _answering_sim(spec(OPENAI, "429x1"), spec(GEMINI, "refusal"))
    assert sim.send(OPENAI).status_code == 429
    assert "Forgot password" in text_of(OPENAI, json.loads(sim.send(OPENAI).content))
    refused = json.loads(sim.send(GEMINI).content)["candidates"][0]
    assert refused["finishReason"] == "SAFETY" and "content" not in refused
