"""Google Gemini `generateContent` on the Generative Language API (docs/gemini.md).

Request: `x-goog-api-key` (never `?key=`: a URL ends up in logs), `systemInstruction`,
`contents`, `generationConfig.maxOutputTokens`. Reply: text in
`candidates[0].content.parts[].text`, skipping parts marked `thought: true`;
`finishReason`; `usageMetadata`; `modelVersion`. Refusals: `promptFeedback.blockReason`
with no candidates at all (a blocked prompt, HTTP 200), or a safety `finishReason`.
Stream (`:streamGenerateContent?alt=sse`): `data: {...}\\r\\n\\r\\n` frames, no `[DONE]`,
ends at EOF; the last chunk carries `finishReason`, so EOF without one is a cut stream;
`data: {"error": {...}}` is an error inside the 200.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from gateway.model import ErrorKind, Reply, Request, Role
from gateway.providers.failures import malformed, stream_error, unfinished
from gateway.providers.http import HttpProvider
from gateway.providers.jsonshape import as_dict, as_int, as_list, as_str, carries_error, decode_json
from gateway.providers.turns import alternating

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.providers.sse import SseEvent
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
ROLES = {Role.CUSTOMER: "user", Role.AGENT: "model"}
API_VERSION = "v1beta"  # what python-genai and the REST docs use: every current model
_VERSION_SEGMENT = re.compile(r"v\d+(?:(?:alpha|beta)\d*)?\Z")


def api_root(base_url: str | None) -> str:
    """The URL `models/...` is appended to.

    Google documents the endpoint without a version (`https://generativelanguage.googleapis.com`,
    python-genai's `base_url`, to which the SDK appends its `api_version`); a base_url that
    already ends in a version segment (`.../v1beta`, `.../v1`) is used as written.
    """
    base = (base_url or GEMINI_BASE_URL).rstrip("/")
    if _VERSION_SEGMENT.match(base.rpartition("/")[2]):
        return base
    return f"{base}/{API_VERSION}"


# python-genai types.FinishReason: the values that mean the output was withheld for safety,
# policy or recitation. The others (STOP, MAX_TOKENS, OTHER, LANGUAGE, ...) end an answer.
REFUSAL_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


# finishReason values that end an answer before its end (docs/gemini.md#gemini-response).
CUT_SHORT = {"MAX_TOKENS": ErrorKind.OUTPUT_LIMIT}


class _Chunk:
    """What one GenerateContentResponse (a whole reply or one stream chunk) says."""

    __slots__ = (
        "block_message",
        "block_reason",
        "candidates",
        "finish_message",
        "finish_reason",
        "model",
        "text",
        "usage",
    )

    def __init__(self, data: object, now: float) -> None:
        if carries_error(data):
            raise stream_error(data, now=now)
        if not isinstance(data, dict):
            raise malformed("the reply is not a JSON object")
        candidates = as_list(data.get("candidates"))
        candidate = as_dict(candidates[0]) if candidates else {}
        self.candidates = bool(candidates)
        self.text = "".join(
            as_str(part.get("text")) or ""
            for part in map(as_dict, as_list(as_dict(candidate.get("content")).get("parts")))
            if part.get("thought") is not True  # thinking models' thought summaries
        )
        self.finish_reason = as_str(candidate.get("finishReason"))
        self.finish_message = as_str(candidate.get("finishMessage"))
        feedback = as_dict(data.get("promptFeedback"))
        self.block_reason = as_str(feedback.get("blockReason"))
        self.block_message = as_str(feedback.get("blockReasonMessage"))
        self.model = as_str(data.get("modelVersion"))
        self.usage = as_dict(data.get("usageMetadata"))


def _finish(
    text: str,
    *,
    finish_reason: str | None,
    finish_message: str | None,
    block_reason: str | None,
    block_message: str | None,
    model: str | None,
    usage: dict[str, object],
) -> Reply:
    # Both are the provider's filter: a blocked prompt (no candidate at all) and an answer
    # withheld for safety. What it says is the provider's explanation, not model text.
    if block_reason is not None:
        refused = True
        finish_reason = block_reason  # the only reason this response ended
        explanation = block_message or f"The provider blocked this request ({block_reason})."
    else:
        refused = finish_reason in REFUSAL_FINISH_REASONS
        explanation = finish_message or f"The provider withheld this answer ({finish_reason})."
    if refused:
        text = explanation
    output = as_int(usage.get("candidatesTokenCount"))
    thoughts = as_int(usage.get("thoughtsTokenCount"))
    if output is not None and thoughts is not None:
        # Counted like OpenAI's completion_tokens, which include reasoning: what was billed.
        output += thoughts
    return Reply(
        text=text,
        finish_reason=finish_reason,
        model=model,
        input_tokens=as_int(usage.get("promptTokenCount")),
        output_tokens=output,
        refused=refused,
        filtered=refused,
        cut_short=None if refused else CUT_SHORT.get(finish_reason or ""),
    )


def parse_generate(data: object, *, now: float) -> Reply:
    """A whole (non-streamed) GenerateContentResponse."""
    chunk = _Chunk(data, now)
    if not chunk.candidates and chunk.block_reason is None:
        raise malformed("the reply has no candidates and no block reason")
    return _finish(
        chunk.text,
        finish_reason=chunk.finish_reason,
        finish_message=chunk.finish_message,
        block_reason=chunk.block_reason if not chunk.candidates else None,
        block_message=chunk.block_message,
        model=chunk.model,
        usage=chunk.usage,
    )


class GenerateStream:
    """Reads a streamGenerateContent?alt=sse stream. It has no end marker: it is over at
    EOF, and complete only if a chunk carried a finishReason (or the prompt was blocked)."""

    __slots__ = (
        "_block_message",
        "_block_reason",
        "_finish_message",
        "_finish_reason",
        "_model",
        "_now",
        "_usage",
        "finished",
    )

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.finished = False  # never: only EOF ends this stream
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._block_reason: str | None = None
        self._block_message: str | None = None
        self._model: str | None = None
        self._usage: dict[str, object] = {}

    def feed(self, event: SseEvent) -> str:
        chunk = _Chunk(decode_json(event.data, what="a stream chunk"), self._now())
        if not chunk.candidates and chunk.block_reason is not None:
            # "sent only in the first stream chunk and only if no candidates were generated"
            self._block_reason, self._block_message = chunk.block_reason, chunk.block_message
        self._finish_reason = chunk.finish_reason or self._finish_reason
        self._finish_message = chunk.finish_message or self._finish_message
        self._model = chunk.model or self._model
        self._usage = chunk.usage or self._usage
        return chunk.text

    def reply(self, text: str) -> Reply:
        if self._finish_reason is None and self._block_reason is None:
            return unfinished(self.refused_so_far(text))
        return self._reply(text)

    def refused_so_far(self, text: str) -> Reply | None:
        refused = self._block_reason is not None or self._finish_reason in REFUSAL_FINISH_REASONS
        return self._reply(text) if refused else None

    def _reply(self, text: str) -> Reply:
        return _finish(
            text,
            finish_reason=self._finish_reason,
            finish_message=self._finish_message,
            block_reason=self._block_reason,
            block_message=self._block_message,
            model=self._model,
            usage=self._usage,
        )


def generate_body(request: Request) -> dict[str, object]:
    """A GenerateContentRequest: what a batch's inlined request holds too."""
    body: dict[str, object] = {}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    body["contents"] = [
        {"role": ROLES[role], "parts": [{"text": text}]} for role, text in alternating(request)
    ]
    body["generationConfig"] = {"maxOutputTokens": request.max_output_tokens}
    return body


class GeminiProvider(HttpProvider):
    def __init__(
        self,
        deployment: Deployment,
        key: Secret | None,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        base = api_root(deployment.base_url)
        model = quote((deployment.model or "").removeprefix("models/"), safe="")
        self._stream = f"{base}/models/{model}:streamGenerateContent?alt=sse"
        super().__init__(
            deployment,
            url=f"{base}/models/{model}:generateContent",
            headers={} if key is None else {"x-goog-api-key": key.reveal()},
            transport=transport,
            clock=clock,
        )

    def _url(self, *, stream: bool) -> str:
        return self._stream if stream else self._endpoint

    def _body(self, request: Request, *, stream: bool) -> dict[str, object]:
        return generate_body(request)

    def _parse(self, data: object) -> Reply:
        return parse_generate(data, now=self._now())

    def _parser(self) -> GenerateStream:
        return GenerateStream(self._now)
