"""OpenAI Chat Completions, and every server that speaks it: Ollama, vLLM, Groq, Mistral,
OpenRouter, Together, DeepSeek (`base_url`), and Azure OpenAI (`azure.py` reuses all of this).

Wire facts (docs/openai.md, docs/azure.md, docs/compatible.md): text in
`choices[0].message.content`; a refusal in `message.refusal` (usually with finish_reason
"stop", so it is checked first) or finish_reason "content_filter"; usage in
`usage.prompt_tokens` / `completion_tokens`.
Streams are `data:` frames ending in `data: [DONE]`; a chunk with `choices: []` carries
only usage or (Azure's first chunk) `prompt_filter_results`; an error mid-stream is a
frame `{"error": {...}}`; OpenRouter may answer 200 with `choices[0].finish_reason "error"`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.model import ErrorKind, Reply, Request, Role
from gateway.providers import headroom
from gateway.providers.failures import malformed, stream_error, unfinished
from gateway.providers.http import HttpProvider
from gateway.providers.jsonshape import (
    as_dict,
    as_int,
    as_list,
    as_str,
    carries_error,
    decode_json,
    string,
)
from gateway.providers.turns import sequence
from gateway.record import record

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import httpx

    from gateway.config import Deployment
    from gateway.model import Headroom
    from gateway.providers.sse import SseEvent
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

OPENAI_BASE_URL = "https://api.openai.com/v1"
FILTERED = "The provider's content filter withheld this answer."
# finish_reason values that end an answer before its end (docs/openai.md#openai-response).
# "length" says only that max tokens were reached: the output limit, or (rarely) the model's window.
CUT_SHORT = {"length": ErrorKind.OUTPUT_LIMIT}
# Each message's JSON up to its text, by who wrote it (the wire's roles: system, user, assistant).
_SYSTEM = b'{"role":"system","content":'
_OPENINGS = {
    Role.CUSTOMER: b'{"role":"user","content":',
    Role.AGENT: b'{"role":"assistant","content":',
}


@record
class Dialect:
    """What a Chat Completions server accepts beyond the common core.

    OpenAI itself wants `max_completion_tokens`: `max_tokens` is deprecated there and a 400
    on reasoning models. Many compatible servers (older vLLM, Ollama, Groq's older docs,
    Together) only know `max_tokens`, and ignoring an unknown field is not something to
    count on. Likewise `stream_options` is a 422 on Mistral ("Extra inputs are not
    permitted", avante.nvim#2347), and a 4xx is fatal to the whole question: compatible
    servers get the common core, and report usage in a stream only if they do so anyway.
    """

    max_tokens_field: str
    stream_usage: bool


OPENAI = Dialect(max_tokens_field="max_completion_tokens", stream_usage=True)
COMPATIBLE = Dialect(max_tokens_field="max_tokens", stream_usage=False)


def dialect_for(base_url: str) -> Dialect:
    host = base_url.split("://", 1)[-1].split("/", 1)[0].lower()
    return OPENAI if host == "api.openai.com" else COMPATIBLE


def chat_body(request: Request, *, model: str | None, dialect: Dialect, stream: bool) -> bytes:
    """The Chat Completions body of `request`, its JSON written field by field: the bytes
    the C encoder writes for the same object (`jsonshape.encode`), where building that
    object and walking it cost about as much as escaping the prompt (bench/RESULTS.md)."""
    parts = [b'{"messages":[']
    if request.system:
        parts += (_SYSTEM, string(request.system), b"},")
    for role, text in sequence(request):
        parts += (_OPENINGS[role], string(text), b"},")
    parts[-1] = b"}]"  # the last message's end (the question's: there is always one)
    if model:  # optional on single-model servers; Azure reads the deployment from the path
        parts += (b',"model":', string(model))
    parts.append(b',"%s":%d' % (dialect.max_tokens_field.encode(), request.max_output_tokens))
    if not stream:
        parts.append(b',"stream":false}')
    elif dialect.stream_usage:
        parts.append(b',"stream":true,"stream_options":{"include_usage":true}}')
    else:
        parts.append(b',"stream":true}')
    return b"".join(parts)


def content_text(value: object) -> str:
    """Message or delta `content`: a string, or (Mistral's reasoning models, some gateways)
    a list of typed parts, of which only the `text` parts are the answer."""
    if isinstance(value, str):
        return value
    parts = (as_dict(part) for part in as_list(value))
    return "".join(as_str(p.get("text")) or "" for p in parts if p.get("type", "text") == "text")


def _finish(
    text: str,
    *,
    refusal: str | None,
    finish_reason: str | None,
    model: str | None,
    usage: dict[str, object],
) -> Reply:
    # The model's own refusal (`message.refusal`) is its words; `content_filter` is the
    # provider's filter withholding the answer, whatever partial text came with it.
    filtered = not refusal and finish_reason == "content_filter"
    refused = bool(refusal) or filtered
    if refusal:
        text = refusal
    if filtered:
        text = FILTERED
    return Reply(
        text=text,
        finish_reason=finish_reason,
        model=model or None,
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        refused=refused,
        filtered=filtered,
        cut_short=None if refused else CUT_SHORT.get(finish_reason or ""),
    )


def _raise_if_error(chunk: dict[str, object], choice: dict[str, object], now: float) -> None:
    """An error carried by a 200: a top-level `error` (OpenAI/vLLM/Gemini-compat frames), or
    OpenRouter's `choices[0].finish_reason "error"` with `choices[0].error`."""
    if chunk.get("error") or choice.get("error") or choice.get("finish_reason") == "error":
        raise stream_error(chunk, now=now)


def parse_completion(data: object, *, now: float) -> Reply:
    """A whole (non-streamed) chat.completion."""
    if isinstance(data, list) and carries_error(data):
        # Gemini's OpenAI-compatible endpoint wraps its errors in a list
        raise stream_error(data, now=now)
    body = as_dict(data)
    choices = as_list(body.get("choices"))
    choice = as_dict(choices[0]) if choices else {}
    _raise_if_error(body, choice, now)
    if not choice:
        raise malformed("the reply has no choices")
    message = as_dict(choice.get("message"))
    return _finish(
        content_text(message.get("content")),
        refusal=as_str(message.get("refusal")),
        finish_reason=as_str(choice.get("finish_reason")),
        model=as_str(body.get("model")),
        usage=as_dict(body.get("usage")),
    )


class ChatStream:
    """Reads a chat.completion.chunk stream. Ends at `[DONE]`; a finish_reason also counts as
    finished (some servers close without `[DONE]`); EOF without either is a cut stream."""

    __slots__ = ("_finish_reason", "_model", "_now", "_refusal", "_usage", "finished")

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.finished = False
        self._finish_reason: str | None = None
        self._model: str | None = None
        self._refusal = False
        self._usage: dict[str, object] = {}

    def feed(self, event: SseEvent) -> str:
        if event.data == "[DONE]":
            self.finished = True
            return ""
        data = decode_json(event.data, what="a stream chunk")
        if isinstance(data, list) and carries_error(data):
            raise stream_error(data, now=self._now())
        if not isinstance(data, dict):
            raise malformed(f"a stream chunk is not a JSON object: {event.data[:80]!r}")
        choices = as_list(data.get("choices"))
        choice = as_dict(choices[0]) if choices else {}
        _raise_if_error(data, choice, self._now())
        model = as_str(data.get("model"))
        if model:  # Azure's first chunk names no model
            self._model = model
        usage = data.get("usage")
        if isinstance(usage, dict) and usage:
            self._usage = usage
        if not choice:  # the usage chunk; Azure's prompt_filter_results chunk
            return ""
        finish_reason = as_str(choice.get("finish_reason"))
        if finish_reason:
            self._finish_reason = finish_reason
        delta = as_dict(choice.get("delta"))
        refusal = as_str(delta.get("refusal"))
        if refusal:
            self._refusal = True
        return content_text(delta.get("content")) + (refusal or "")

    def reply(self, text: str) -> Reply:
        if self._finish_reason is None and not self.finished:
            return unfinished(self.refused_so_far(text))
        return self._reply(text)

    def refused_so_far(self, text: str) -> Reply | None:
        if not self._refusal and self._finish_reason != "content_filter":
            return None
        return self._reply(text)

    def _reply(self, text: str) -> Reply:
        return _finish(
            text,
            # the refusal's text already streamed as deltas: it is `text` itself
            refusal=text if self._refusal else None,
            finish_reason=self._finish_reason,
            model=self._model,
            usage=self._usage,
        )


class OpenAIProvider(HttpProvider):
    """An OpenAI-protocol deployment: OpenAI itself or any compatible server (`base_url`).

    With no key (a local Ollama), no Authorization header is sent at all.
    """

    def __init__(
        self,
        deployment: Deployment,
        key: Secret | None,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._model = deployment.model
        url, self._dialect = self._locate(deployment)
        super().__init__(
            deployment, url=url, headers=self._auth(key), transport=transport, clock=clock
        )

    def _locate(self, deployment: Deployment) -> tuple[str, Dialect]:
        base = (deployment.base_url or OPENAI_BASE_URL).rstrip("/")
        return f"{base}/chat/completions", dialect_for(base)

    def _auth(self, key: Secret | None) -> dict[str, str]:
        return {} if key is None else {"authorization": f"Bearer {key.reveal()}"}

    def _body(self, request: Request, *, stream: bool) -> bytes:
        return chat_body(request, model=self._model, dialect=self._dialect, stream=stream)

    def _parse(self, data: object) -> Reply:
        return parse_completion(data, now=self._now())

    def _parser(self) -> ChatStream:
        return ChatStream(self._now)

    def _headroom(self, headers: Mapping[str, str], now: float) -> Headroom | None:
        return headroom.x_ratelimit(headers, now)
