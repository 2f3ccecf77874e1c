"""Fault injection: in-process fake providers that speak each provider's real wire format.

`support-ask simulate` runs the real engine, adapters and classifier against
`SimulatedTransport`, an httpx transport that never touches the network. Each deployment
is pointed at its own fake address (`simulated_deployment`), answers in its provider's
real format (OpenAI, Azure OpenAI, Anthropic Messages, Gemini generateContent, streamed
or not), and fails exactly as the user asked with `--fail NAME=SPEC`.

The fault grammar (`GRAMMAR` below is the user-facing copy):

    NAME=SPEC[,SPEC...]          specs apply in order, one call after another
    SPEC  = WHAT [xCOUNT] [@DELAY]
    WHAT  = 400..599             that HTTP status, with the provider's real error body
          | timeout              no answer: the read times out
          | reset                the connection drops before any byte
          | cut:N  (or cutN)     a streamed answer stops after N text deltas, connection dropped
          | refusal              a 200 answer that refuses (the provider's refusal form)
          | blocked              the prompt itself is flagged (Gemini promptFeedback,
                                 OpenAI 400 invalid_prompt, Azure 400 content_filter;
                                 Anthropic has no such form and refuses instead)
          | overflow             the provider says the input exceeds the context window
          | quota                quota or billing exhausted (not a rate limit)
          | ok                   a normal answer (to schedule failures after some successes)
    COUNT = N | *                how many calls in a row; * = every call from then on
    DELAY = N s | N ms           a Retry-After, placed where that provider puts it

Judgement calls, stated once here:

- A spec with no count means *every call*: `primary=401` keeps the deployment broken, which
  is what a broken key does. Write `429x2` for "twice, then fine". Once a schedule's finite
  steps are used up the deployment answers normally; a step that repeats forever must be
  the last one (anything after it could never happen, so it is an error).
- The status is the *meaning*; the provider decides the wire. Gemini reports a bad key as
  400 INVALID_ARGUMENT with reason API_KEY_INVALID, so `401` on a Gemini deployment
  answers that, as the real API does. Every other status is sent as given.
- Retry-After goes where the provider puts it: a whole-second `retry-after` header
  (rounded up, as HTTP requires) for OpenAI, Azure and Anthropic, plus the exact
  `retry-after-ms` for OpenAI and Azure, and "try again in ..." in their message text;
  for Gemini, `RetryInfo.retryDelay` in the body and "Please retry in ..." in the message.
  A status with no `@` sends no retry hint at all, so plain backoff can be seen.
- `cut:N` on a request that does not stream behaves like `reset`. When N is at least the
  number of deltas in the answer, every delta is sent and the connection drops before the
  terminal marker (finish reason, `message_stop`, `[DONE]`).
- `timeout` waits for the request's read timeout (httpx's `extensions["timeout"]`): on a
  `VirtualClock` it advances the clock without sleeping, on a real clock it really waits;
  then it raises `httpx.ReadTimeout`.
- The fake servers also check what a real server checks (the endpoint path, required body
  fields, valid JSON) and answer a mistake with the provider's real 400/404, so an adapter
  bug shows up in simulation as it would in production.
- `local` deployments are not HTTP: `simulated_deployment` leaves them alone and
  `check_names` rejects faults aimed at them.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.model import ProviderKind
from gateway.seams import Clock, Sleeper

GRAMMAR = """\
fault spec: NAME=SPEC[,SPEC...]   (specs apply in order, one call after another)
  SPEC  = WHAT[xCOUNT][@DELAY]
  WHAT  = an HTTP status 400-599 | timeout | reset | cut:N | refusal | blocked
          | overflow | quota | ok
  COUNT = N or * (every call); no count means every call
  DELAY = Retry-After, e.g. @2s or @500ms (only after a status)
examples: primary=429x3@2s   fallback=503x*   primary=timeoutx2,cut:5   long=401"""

SIM_HOST = "sim.invalid"  # .invalid never resolves (RFC 2606): a leaked request cannot go out
AZURE_API_VERSION = "2024-10-21"
_DEFAULT_READ_TIMEOUT = 5.0  # httpx's own default, for a request that carries none

Json = dict[str, Any]


# --------------------------------------------------------------------------- the grammar


class FaultKind(StrEnum):
    OK = "ok"
    STATUS = "status"
    TIMEOUT = "timeout"
    RESET = "reset"
    CUT = "cut"
    REFUSAL = "refusal"
    BLOCKED = "blocked"
    OVERFLOW = "overflow"
    QUOTA = "quota"


_KEYWORDS: dict[str, FaultKind] = {
    kind.value: kind for kind in FaultKind if kind not in (FaultKind.STATUS, FaultKind.CUT)
}


@dataclass(frozen=True)
class Step:
    """One spec: what happens, and to how many calls in a row (None = every call)."""

    kind: FaultKind
    times: int | None = None
    status: int | None = None  # STATUS only
    tokens: int = 0  # CUT only: text deltas sent before the drop
    retry_after: float | None = None  # seconds; STATUS only

    def __str__(self) -> str:
        if self.kind is FaultKind.STATUS:
            what = str(self.status)
        elif self.kind is FaultKind.CUT:
            what = f"cut:{self.tokens}"
        else:
            what = self.kind.value
        count = "" if self.times is None else f"x{self.times}"
        return what + count + ("" if self.retry_after is None else "@" + _delay(self.retry_after))


@dataclass(frozen=True)
class Fault:
    """A deployment's schedule of faults: steps applied one call after another."""

    steps: tuple[Step, ...]

    def at(self, call: int) -> Step | None:
        """What the `call`-th call (from 1) gets; None = a normal answer."""
        left = call
        for step in self.steps:
            if step.times is None or left <= step.times:
                return None if step.kind is FaultKind.OK else step
            left -= step.times
        return None

    def then(self, other: Fault) -> Fault:
        """This schedule followed by `other` (a second `--fail` for the same name)."""
        return _checked(self.steps + other.steps)

    def __str__(self) -> str:
        return ",".join(str(s) for s in self.steps)


def _delay(seconds: float) -> str:
    """A delay as the grammar writes it: `2s`, `500ms`, `1.5s`."""
    if seconds == int(seconds) and seconds >= 1:
        return f"{int(seconds)}s"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:g}s"


def _bad(text: str, problem: str) -> ValueError:
    return ValueError(f"bad fault {text!r}: {problem}\n{GRAMMAR}")


def parse_fault(text: str) -> tuple[str, Fault]:
    """Parse one `--fail` value, `NAME=SPEC[,SPEC...]`; a ValueError says what is wrong."""
    name, eq, specs = text.partition("=")
    name = name.strip()
    if not eq:
        raise _bad(text, "missing '=': write NAME=SPEC, e.g. primary=429x3")
    if not name:
        raise _bad(text, "no deployment name before '='")
    parts = [p.strip() for p in specs.split(",")]
    if not any(parts):
        raise _bad(text, f"no spec after '{name}='")
    if "" in parts:
        raise _bad(text, "an empty spec between commas")
    try:
        return name, _checked(tuple(_parse_step(p) for p in parts))
    except ValueError as problem:
        raise _bad(text, str(problem)) from None


def parse_faults(texts: Iterable[str]) -> dict[str, Fault]:
    """Parse every `--fail`; a name given twice gets both schedules, in order."""
    faults: dict[str, Fault] = {}
    for text in texts:
        name, fault = parse_fault(text)
        try:
            faults[name] = faults[name].then(fault) if name in faults else fault
        except ValueError as problem:
            raise _bad(text, str(problem)) from None
    return faults


def _checked(steps: tuple[Step, ...]) -> Fault:
    for step, later in itertools.pairwise(steps):
        if step.times is None:
            raise ValueError(
                f"'{step}' applies to every call, so '{later}' after it would never happen"
                f" (give it a count, e.g. '{step}x2')"
            )
    return Fault(steps)


_COUNT = re.compile(r"(?P<what>.*?)x(?P<count>\d+|\*)", re.IGNORECASE)
_DELAY = re.compile(r"(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|s)", re.IGNORECASE)
_CUT = re.compile(r"cut:?(?P<n>\d+)", re.IGNORECASE)


def _parse_step(spec: str) -> Step:
    head, at, delay_text = spec.partition("@")
    retry_after = _parse_delay(delay_text) if at else None
    times: int | None = None
    counted = _COUNT.fullmatch(head)
    if counted:
        head = counted["what"]
        if counted["count"] != "*":
            times = int(counted["count"])
            if times < 1:
                raise ValueError(f"the count in '{spec}' must be at least 1 (or * for every call)")
    what = head.strip().lower()
    if not what:
        raise ValueError(f"'{spec}' says how many times but not what (e.g. 429x3)")
    if what.isdigit():
        status = int(what)
        if not 400 <= status <= 599:
            raise ValueError(f"'{what}' is not an HTTP error status (400-599)")
        return Step(FaultKind.STATUS, times, status=status, retry_after=retry_after)
    if retry_after is not None:
        raise ValueError(f"a Retry-After ('@{delay_text}') only goes after an HTTP status")
    cut = _CUT.fullmatch(what)
    if cut:
        return Step(FaultKind.CUT, times, tokens=int(cut["n"]))
    if what.startswith("cut"):
        raise ValueError(f"'{what}' needs the number of deltas before the cut, e.g. cut:5")
    if what in _KEYWORDS:
        return Step(_KEYWORDS[what], times)
    close = difflib.get_close_matches(what, [*_KEYWORDS, "cut:N"], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ValueError(f"unknown fault '{what}'{hint}")


def _parse_delay(text: str) -> float:
    match = _DELAY.fullmatch(text.strip())
    if not match:
        raise ValueError(f"'@{text}' is not a delay: write it with a unit, e.g. @2s or @500ms")
    value = float(match["value"])
    return value / 1000 if match["unit"].lower() == "ms" else value


def check_names(faults: Mapping[str, Fault], deployments: Iterable[Deployment]) -> None:
    """Reject a fault aimed at a deployment the config lacks, or at an offline one."""
    by_name = {d.name: d for d in deployments}
    for name in faults:
        deployment = by_name.get(name)
        if deployment is None:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            known = ", ".join(by_name) or "none"
            raise ValueError(
                f"--fail names '{name}', which is not a deployment in this config{hint};"
                f" deployments: {known}"
            )
        if deployment.provider is ProviderKind.LOCAL:
            raise ValueError(
                f"--fail names '{name}', a local deployment: it makes no HTTP calls,"
                " so there is nothing to break"
            )


# --------------------------------------------------------------------------- addresses


def simulated_deployment(deployment: Deployment) -> Deployment:
    """A copy of `deployment` whose address is its fake server's; `local` is returned as is."""
    if deployment.provider is ProviderKind.LOCAL:
        return deployment
    root = f"https://{SIM_HOST}/{quote(deployment.name, safe='')}"
    if deployment.provider is ProviderKind.AZURE:
        return replace(
            deployment, base_url=root, api_version=deployment.api_version or AZURE_API_VERSION
        )
    # Where the real default address carries a version, the fake does too, so an adapter
    # that appends its usual path lands where it would in production.
    suffix = {ProviderKind.OPENAI: "/v1", ProviderKind.GEMINI: "/v1beta"}.get(
        deployment.provider, ""
    )
    return replace(deployment, base_url=root + suffix)


# --------------------------------------------------------------------------- one call


@dataclass(frozen=True)
class _Call:
    """What a fake server knows about the request it is answering."""

    request: httpx.Request
    body: Json
    deployment: Deployment
    number: int  # this deployment's call count, from 1
    question: str
    stream: bool
    input_tokens: int
    now: float  # wall clock, epoch seconds

    @property
    def name(self) -> str:
        return self.deployment.name

    @property
    def model(self) -> str:
        return self.deployment.model or self.deployment.name

    @property
    def tag(self) -> str:
        """A request/response id: deterministic, so two runs print the same thing."""
        return f"sim{self.name.encode().hex()[:12]}{self.number:04d}"


def answer_text(deployment_name: str, question: str) -> str:
    """The simulated answer: short, deterministic, and saying who answered."""
    asked = " ".join(question.split())
    if len(asked) > 80:
        asked = asked[:77].rstrip() + "..."
    topic = f"“{asked}”" if asked else "your question"
    return (
        f"[{deployment_name}] Thanks for asking about {topic}. Follow the steps in the "
        "matching help-centre article; if they do not solve it, reply here and I can open "
        "a ticket for you."
    )


REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


def _deltas(text: str) -> list[str]:
    """The answer cut into word-sized text deltas that join back to the exact text."""
    return re.findall(r"\s*\S+", text) or [text]


def _estimate_tokens(body: bytes) -> int:
    return max(1, math.ceil(len(body) / 4))


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def _json_response(status: int, body: object, headers: Mapping[str, str] = {}) -> httpx.Response:
    content = _dumps(body)
    return httpx.Response(
        status,
        headers={"content-type": "application/json", **headers},
        content=content,
    )


class _Frames(httpx.SyncByteStream):
    """A response body sent frame by frame; `dropped` ends it like a closed socket."""

    def __init__(self, frames: list[bytes], *, dropped: bool, request: httpx.Request) -> None:
        self._frames = frames
        self._dropped = dropped
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        yield from self._frames
        if self._dropped:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
                " (incomplete chunked read)",
                request=self._request,
            )


@dataclass(frozen=True)
class _Stream:
    """A streamed answer in three parts, so a cut can fall after any text delta."""

    head: list[bytes]
    deltas: list[bytes]
    tail: list[bytes]
    content_type: str = "text/event-stream; charset=utf-8"

    def response(
        self, request: httpx.Request, headers: Mapping[str, str], cut: int | None = None
    ) -> httpx.Response:
        frames = self.head + (self.deltas if cut is None else self.deltas[:cut])
        if cut is None:
            frames = frames + self.tail
        return httpx.Response(
            200,
            headers={"content-type": self.content_type, **headers},
            stream=_Frames(frames, dropped=cut is not None, request=request),
        )


def _sse(data: object, event: str | None = None, *, newline: str = "\n") -> bytes:
    text = data if isinstance(data, str) else _dumps(data).decode()
    lines = ([f"event: {event}"] if event else []) + [f"data: {text}"]
    return (newline.join(lines) + newline * 2).encode()


# --------------------------------------------------------------------------- wire formats


class _Wire(Protocol):
    """One provider's HTTP dialect, as its fake server speaks it."""

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        """A real server's 404/400 for a wrong path or a malformed body; None if fine."""
        ...

    def question(self, body: Json) -> str: ...

    def streams(self, request: httpx.Request, body: Json) -> bool: ...

    def answer(self, call: _Call, text: str) -> httpx.Response: ...

    def stream(self, call: _Call, text: str) -> _Stream: ...

    def refusal(self, call: _Call) -> httpx.Response: ...

    def blocked(self, call: _Call) -> httpx.Response: ...

    def error(self, call: _Call, status: int, retry_after: float | None) -> httpx.Response: ...

    def overflow(self, call: _Call) -> httpx.Response: ...

    def quota(self, call: _Call) -> httpx.Response: ...

    def headers(self, call: _Call) -> dict[str, str]: ...


def _load(request: httpx.Request) -> Json | str:
    """The request's JSON object, or the reason it is not one."""
    try:
        body = json.loads(request.read() or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        return str(exc)
    return body if isinstance(body, dict) else "the body is not a JSON object"


def _text_of(content: object) -> str:
    """Text of a message's content: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _last_user(messages: object, role_key: str = "role", content_key: str = "content") -> str:
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get(role_key) == "user":
            return _text_of(message.get(content_key))
    return ""


def _whole_seconds(seconds: float) -> str:
    """An HTTP Retry-After value: whole seconds, rounded up so nobody retries early."""
    return str(math.ceil(seconds))


class _OpenAIWire:
    """OpenAI Chat Completions (reference §2)."""

    path_end = "/chat/completions"
    required: tuple[str, ...] = ("model", "messages")

    # status -> (type, code, message); anything else gets a generic envelope
    errors: Mapping[int, tuple[str | None, str | None, str]] = {
        400: (
            "invalid_request_error",
            "unsupported_parameter",
            "Unsupported parameter: 'max_tokens' is not supported with this model."
            " Use 'max_completion_tokens' instead.",
        ),
        401: (
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided. You can find your API key at"
            " https://platform.openai.com/account/api-keys.",
        ),
        403: (
            "request_forbidden",
            "unsupported_country_region_territory",
            "Country, region, or territory not supported",
        ),
        429: ("requests", "rate_limit_exceeded", ""),  # message built per model below
        500: (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        503: (
            "service_unavailable_error",
            "server_is_overloaded",
            "The server is overloaded or not ready yet.",
        ),
    }

    # --- requests

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        if not request.url.path.endswith(self.path_end) or request.method != "POST":
            return self._envelope(
                404,
                "invalid_request_error",
                None,
                f"Invalid URL ({request.method} {request.url.path})",
            )
        body = _load(request)
        if isinstance(body, str):
            return self._envelope(
                400,
                "invalid_request_error",
                None,
                "We could not parse the JSON body of your request. (HINT: This likely means"
                " you aren't using your HTTP library correctly. The OpenAI API expects a JSON"
                " payload, but what was sent was not valid JSON.)",
            )
        for field in self.required:
            if field not in body:
                return self._envelope(
                    400,
                    "invalid_request_error",
                    "missing_required_parameter",
                    f"Missing required parameter: '{field}'.",
                    param=field,
                )
        return None

    def question(self, body: Json) -> str:
        return _last_user(body.get("messages"))

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return body.get("stream") is True

    # --- answers

    def _base(self, call: _Call, kind: str) -> Json:
        return {
            "id": f"chatcmpl-{call.tag}",
            "object": kind,
            "created": int(call.now),
            "model": call.model,
            "system_fingerprint": "fp_sim",
        }

    def _usage(self, call: _Call, output_tokens: int) -> Json:
        return {
            "prompt_tokens": call.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": call.input_tokens + output_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def _choice(self, message: Json, finish: str) -> Json:
        return {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}

    def _completion(self, call: _Call, message: Json, finish: str, tokens: int) -> Json:
        body = self._base(call, "chat.completion")
        body["choices"] = [self._choice(message, finish)]
        body["usage"] = self._usage(call, tokens)
        return body

    def answer(self, call: _Call, text: str) -> httpx.Response:
        message: Json = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
        body = self._completion(call, message, "stop", len(_deltas(text)))
        return _json_response(200, body, self.headers(call))

    def refusal(self, call: _Call) -> httpx.Response:
        # OpenAI's structured refusal: content null, the refusal in its own field,
        # finish_reason still "stop" (reference §1.4).
        if call.stream:
            return self._stream(call, REFUSAL_TEXT, "refusal", "stop").response(
                call.request, self.headers(call)
            )
        message = {"role": "assistant", "content": None, "refusal": REFUSAL_TEXT}
        body = self._completion(call, message, "stop", len(_deltas(REFUSAL_TEXT)))
        return _json_response(200, body, self.headers(call))

    def blocked(self, call: _Call) -> httpx.Response:
        return self._envelope(
            400,
            "invalid_request_error",
            "invalid_prompt",
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy."
            " Please try again with a different prompt.",
            headers=self.headers(call),
        )

    def _chunk(self, call: _Call, delta: Json, finish: str | None = None) -> Json:
        chunk = self._base(call, "chat.completion.chunk")
        chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return chunk

    def stream(self, call: _Call, text: str) -> _Stream:
        return self._stream(call, text, "content", "stop")

    def _stream(self, call: _Call, text: str, field: str, finish: str) -> _Stream:
        pieces = _deltas(text)
        head = [_sse(self._chunk(call, {"role": "assistant", "content": "", "refusal": None}))]
        deltas = [_sse(self._chunk(call, {field: piece})) for piece in pieces]
        tail = [_sse(self._chunk(call, {}, finish))]
        # The usage chunk comes only when asked for, as from the real API (reference §2.1).
        options = call.body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage") is True:
            usage = self._base(call, "chat.completion.chunk")
            usage.update(choices=[], usage=self._usage(call, len(pieces)))
            tail.append(_sse(usage))
        tail.append(_sse("[DONE]"))
        return _Stream(head, deltas, tail)

    # --- errors

    def _envelope(
        self,
        status: int,
        type_: str | None,
        code: str | None,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] = {},
    ) -> httpx.Response:
        error = {"message": message, "type": type_, "param": param, "code": code}
        return _json_response(status, {"error": error}, headers)

    def _rate_headers(self, call: _Call, retry_after: float | None) -> dict[str, str]:
        reset = "1s" if retry_after is None else _delay(retry_after)
        headers = {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": reset,
            "x-ratelimit-limit-tokens": "200000",
            "x-ratelimit-remaining-tokens": "199000",
            "x-ratelimit-reset-tokens": "300ms",
        }
        return headers

    def _retry_headers(self, retry_after: float | None) -> dict[str, str]:
        if retry_after is None:
            return {}
        return {
            "retry-after": _whole_seconds(retry_after),
            "retry-after-ms": str(round(retry_after * 1000)),
        }

    def error(self, call: _Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = {**self.headers(call), **self._retry_headers(retry_after)}
        if status == 429:
            headers.update(self._rate_headers(call, retry_after))
            wait = "" if retry_after is None else f" Please try again in {_delay(retry_after)}."
            message = (
                f"Rate limit reached for {call.model} in organization org-simulated on requests"
                f" per min (RPM): Limit 500, Used 500, Requested 1.{wait} Visit"
                " https://platform.openai.com/account/rate-limits to learn more."
            )
            return self._envelope(429, "requests", "rate_limit_exceeded", message, headers=headers)
        if status == 404:
            return self._envelope(
                404,
                "invalid_request_error",
                "model_not_found",
                f"The model `{call.model}` does not exist or you do not have access to it.",
                headers=headers,
            )
        type_, code, message = self.errors.get(status, self._generic(status))
        return self._envelope(status, type_, code, message, headers=headers)

    def _generic(self, status: int) -> tuple[str | None, str | None, str]:
        phrase = httpx.codes.get_reason_phrase(status) or "Error"
        return ("invalid_request_error" if status < 500 else "server_error", None, phrase)

    def overflow(self, call: _Call) -> httpx.Response:
        window = call.deployment.context_window
        return self._envelope(
            400,
            "invalid_request_error",
            "context_length_exceeded",
            f"This model's maximum context length is {window} tokens. However, your messages"
            f" resulted in {window + call.input_tokens} tokens. Please reduce the length of"
            " the messages.",
            param="messages",
            headers=self.headers(call),
        )

    def quota(self, call: _Call) -> httpx.Response:
        return self._envelope(
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details. For"
            " more information on this error, read the docs:"
            " https://platform.openai.com/docs/guides/error-codes/api-errors.",
            headers=self.headers(call),
        )

    def headers(self, call: _Call) -> dict[str, str]:
        return {
            "x-request-id": f"req_{call.tag}",
            "openai-processing-ms": "42",
            "openai-version": "2020-10-01",
        }


_AZURE_SAFE = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "sexual": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": False, "severity": "safe"},
}


class _AzureWire(_OpenAIWire):
    """Azure OpenAI: OpenAI's shape plus content-filter results, string error codes (§5)."""

    required = ("messages",)  # the deployment in the path names the model

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        path = request.url.path
        classic = f"/openai/deployments/{deployment.model}/chat/completions"
        if path.endswith(classic):
            if "api-version" not in request.url.params:
                return self._azure_error(
                    404, "404", "Resource not found", headers={"apim-request-id": "sim"}
                )
        elif "/openai/deployments/" in path and path.endswith(self.path_end):
            return self._deployment_not_found({})
        elif not path.endswith("/openai/v1/chat/completions"):
            return self._azure_error(404, "404", "Resource not found", headers={})
        return super().reject(request, deployment)

    def _azure_error(
        self, http_status: int, code: str, message: str, *, headers: Mapping[str, str], **extra: Any
    ) -> httpx.Response:
        body = {"error": {"code": code, "message": message, **extra}}
        return _json_response(http_status, body, headers)

    def _deployment_not_found(self, headers: Mapping[str, str]) -> httpx.Response:
        return self._azure_error(
            404,
            "DeploymentNotFound",
            "The API deployment for this resource does not exist. If you created the deployment"
            " within the last 5 minutes, please wait a moment and try again.",
            headers=headers,
        )

    def _filters(self) -> list[Json]:
        return [
            {
                "prompt_index": 0,
                "content_filter_results": {
                    **_AZURE_SAFE,
                    "jailbreak": {"filtered": False, "detected": False},
                },
            }
        ]

    def _choice(self, message: Json, finish: str) -> Json:
        choice = super()._choice(message, finish)
        filtered = finish == "content_filter"
        choice["content_filter_results"] = {
            **_AZURE_SAFE,
            "violence": {"filtered": filtered, "severity": "high" if filtered else "safe"},
        }
        return choice

    def _completion(self, call: _Call, message: Json, finish: str, tokens: int) -> Json:
        body = super()._completion(call, message, finish, tokens)
        body["prompt_filter_results"] = self._filters()
        return body

    def _chunk(self, call: _Call, delta: Json, finish: str | None = None) -> Json:
        chunk = super()._chunk(call, delta, finish)
        chunk["choices"][0]["content_filter_results"] = {} if "role" in delta else dict(_AZURE_SAFE)
        return chunk

    def _stream(self, call: _Call, text: str, field: str, finish: str) -> _Stream:
        stream = super()._stream(call, text, field, finish)
        # Azure's first chunk carries only the prompt's filter results: choices is empty.
        first = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": self._filters(),
        }
        return replace(stream, head=[_sse(first), *stream.head])

    def refusal(self, call: _Call) -> httpx.Response:
        # Azure's output filter: a 200 whose finish_reason is content_filter and whose
        # content is withheld (reference §5.2).
        if call.stream:
            return self._stream(call, "", "content", "content_filter").response(
                call.request, self.headers(call)
            )
        message = {"role": "assistant", "content": None}
        body = self._completion(call, message, "content_filter", 0)
        return _json_response(200, body, self.headers(call))

    def blocked(self, call: _Call) -> httpx.Response:
        return self._azure_error(
            400,
            "content_filter",
            "The response was filtered due to the prompt triggering Azure OpenAI's content"
            " management policy. Please modify your prompt and retry. To learn more about our"
            " content filtering policies please read our documentation:"
            " https://go.microsoft.com/fwlink/?linkid=2198766",
            headers=self.headers(call),
            type=None,
            param="prompt",
            status=400,
            innererror={
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    **_AZURE_SAFE,
                    "violence": {"filtered": True, "severity": "medium"},
                },
            },
        )

    def _rate_headers(self, call: _Call, retry_after: float | None) -> dict[str, str]:
        return {"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"}

    def error(self, call: _Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = {**self.headers(call), **self._retry_headers(retry_after)}
        wait = (
            ""
            if retry_after is None
            else f" Please retry after {_whole_seconds(retry_after)} seconds."
        )
        if status == 429:
            headers.update(self._rate_headers(call, retry_after))
            message = (
                "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version"
                f" {call.deployment.api_version or AZURE_API_VERSION} have exceeded token rate"
                f" limit of your current OpenAI S0 pricing tier.{wait} Please go here:"
                " https://aka.ms/oai/quotaincrease if you would like to further increase the"
                " default rate limit."
            )
            return self._azure_error(429, "429", message, headers=headers)
        if status == 401:
            return self._azure_error(
                401,
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure"
                " to provide a valid key for an active subscription and use a correct regional"
                " API endpoint for your resource.",
                headers=headers,
            )
        if status == 404:
            return self._deployment_not_found(headers)
        if status == 400:
            return self._envelope(
                400,
                "invalid_request_error",
                None,
                "Unrecognized request argument supplied: max_tokens_to_sample",
                headers=headers,
            )
        messages = {
            403: "Access denied due to Virtual Network/Firewall rules.",
            500: "The server had an error processing your request. Sorry about that!",
            503: "The service is temporarily unable to process your request. Please try again"
            " later.",
        }
        phrase = httpx.codes.get_reason_phrase(status) or "Error"
        return self._azure_error(
            status, str(status), messages.get(status, phrase) + wait, headers=headers
        )

    def quota(self, call: _Call) -> httpx.Response:
        # An Azure deployment with no quota assigned: a 429 telling you to wait a day.
        headers = {**self.headers(call), "retry-after": "86400"}
        return self._azure_error(
            429,
            "429",
            "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version"
            f" {call.deployment.api_version or AZURE_API_VERSION} have exceeded call rate limit"
            " of your current AIServices S0 pricing tier. Please retry after 86400 seconds."
            " Please contact Azure support service if you would like to further increase the"
            " default rate limit.",
            headers=headers,
        )

    def headers(self, call: _Call) -> dict[str, str]:
        return {"apim-request-id": call.tag, "x-ms-region": "Sweden Central"}


_ANTHROPIC_REFUSAL: Json = {"type": "refusal", "category": None, "explanation": None}


class _AnthropicWire:
    """Anthropic Messages (reference §3)."""

    errors: Mapping[int, tuple[str, str]] = {
        400: (
            "invalid_request_error",
            'messages: roles must alternate between "user" and "assistant", but found'
            ' multiple "user" roles in a row',
        ),
        401: ("authentication_error", "invalid x-api-key"),
        402: ("billing_error", "Your account has a billing issue. Please check your plan."),
        403: (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        409: ("conflict_error", "Conflict"),
        413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        429: (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per"
            " minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You"
            " can see the response headers for current usage. Please reduce the prompt length"
            " or the maximum tokens requested, or try again later.",
        ),
        500: ("api_error", "Internal server error"),
        504: ("timeout_error", "Request timeout"),
        529: ("overloaded_error", "Overloaded"),
    }

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        if not request.url.path.endswith("/v1/messages") or request.method != "POST":
            return self._envelope(404, "not_found_error", "Not Found", {})
        body = _load(request)
        if isinstance(body, str):
            return self._envelope(
                400, "invalid_request_error", f"The request body is not valid JSON: {body}", {}
            )
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                return self._envelope(400, "invalid_request_error", f"{field}: Field required", {})
        return None

    def question(self, body: Json) -> str:
        return _last_user(body.get("messages"))

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return body.get("stream") is True

    def _envelope(
        self, status: int, type_: str, message: str, headers: Mapping[str, str]
    ) -> httpx.Response:
        body = {
            "type": "error",
            "error": {"type": type_, "message": message},
            "request_id": headers.get("request-id", "req_sim"),
        }
        return _json_response(status, body, headers)

    def _message(self, call: _Call, text: str, stop: str, **extra: Any) -> Json:
        return {
            "id": f"msg_{call.tag}",
            "type": "message",
            "role": "assistant",
            "model": call.model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": None,
            **extra,
            "usage": {
                "input_tokens": call.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": len(_deltas(text)) if text else 0,
                "service_tier": "standard",
            },
        }

    def answer(self, call: _Call, text: str) -> httpx.Response:
        return _json_response(200, self._message(call, text, "end_turn"), self.headers(call))

    def refusal(self, call: _Call) -> httpx.Response:
        if call.stream:
            stream = self._stream(call, REFUSAL_TEXT, "refusal", _ANTHROPIC_REFUSAL)
            return stream.response(call.request, self.headers(call))
        body = self._message(call, REFUSAL_TEXT, "refusal", stop_details=_ANTHROPIC_REFUSAL)
        return _json_response(200, body, self.headers(call))

    # Anthropic has no separate "prompt blocked" answer: its safety system refuses.
    blocked = refusal

    def stream(self, call: _Call, text: str) -> _Stream:
        return self._stream(call, text, "end_turn", None)

    def _stream(self, call: _Call, text: str, stop: str, details: Json | None) -> _Stream:
        pieces = _deltas(text)
        start = self._message(call, "", "end_turn")
        start.update(stop_reason=None)
        start["usage"]["output_tokens"] = 1
        head = [
            _sse({"type": "message_start", "message": start}, "message_start"),
            _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
        ]
        deltas = [
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
                "content_block_delta",
            )
            for piece in pieces
        ]
        delta: Json = {"stop_reason": stop, "stop_sequence": None}
        if details is not None:
            delta["stop_details"] = details
        tail = [
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {"type": "message_delta", "delta": delta, "usage": {"output_tokens": len(pieces)}},
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
        return _Stream(head, deltas, tail)

    def error(self, call: _Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = self.headers(call)
        if retry_after is not None:
            headers["retry-after"] = _whole_seconds(retry_after)
        if status == 429:
            reset = datetime.fromtimestamp(call.now + (retry_after or 60), UTC)
            headers.update(
                {
                    "anthropic-ratelimit-requests-limit": "50",
                    "anthropic-ratelimit-requests-remaining": "0",
                    "anthropic-ratelimit-requests-reset": reset.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        if status == 404:
            return self._envelope(404, "not_found_error", f"model: {call.model}", headers)
        phrase = httpx.codes.get_reason_phrase(status) or "Error"
        fallback = ("invalid_request_error" if status < 500 else "api_error", phrase)
        type_, message = self.errors.get(status, fallback)
        return self._envelope(status, type_, message, headers)

    def overflow(self, call: _Call) -> httpx.Response:
        window = call.deployment.context_window
        message = f"prompt is too long: {window + call.input_tokens} tokens > {window} maximum"
        return self._envelope(400, "invalid_request_error", message, self.headers(call))

    def quota(self, call: _Call) -> httpx.Response:
        # Seen in the wild as a 400, not 402 (reference §1.1): only the message tells.
        return self._envelope(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans &"
            " Billing to upgrade or purchase credits.",
            self.headers(call),
        )

    def headers(self, call: _Call) -> dict[str, str]:
        return {"request-id": f"req_{call.tag}", "anthropic-organization-id": "sim-org"}


_GEMINI_STATUS: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "RESOURCE_EXHAUSTED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_GEMINI_FIELDS = frozenset(
    {
        "model",
        "contents",
        "tools",
        "toolConfig",
        "tool_config",
        "safetySettings",
        "safety_settings",
        "systemInstruction",
        "system_instruction",
        "generationConfig",
        "generation_config",
        "cachedContent",
        "cached_content",
    }
)

_RPC = "type.googleapis.com/google.rpc."

_GEMINI_SAFETY: list[Json] = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
]


class _GeminiWire:
    """Gemini generateContent / streamGenerateContent (reference §4)."""

    messages: Mapping[int, str] = {
        400: 'Invalid JSON payload received. Unknown name "max_tokens": Cannot find field.',
        403: "The caller does not have permission",
        500: "An internal error has occurred. Please retry or report in"
        " https://developers.generativeai.google/guide/troubleshooting",
        503: "The model is overloaded. Please try again later.",
        504: "Deadline expired before operation could complete.",
    }

    def _method(self, request: httpx.Request, deployment: Deployment) -> str | None:
        path = request.url.path
        model = (deployment.model or "").removeprefix("models/")
        for method in ("generateContent", "streamGenerateContent"):
            if path.endswith(f"/models/{model}:{method}"):
                return method
        return None

    def reject(self, request: httpx.Request, deployment: Deployment) -> httpx.Response | None:
        method = self._method(request, deployment)
        if method is None or request.method != "POST":
            path = request.url.path
            if ":generateContent" in path or ":streamGenerateContent" in path:
                model = path.rsplit("/models/", 1)[-1].split(":")[0]
                return self._not_found(model, {})
            return self._envelope(404, f"Method not found: {path}", {})
        body = _load(request)
        if isinstance(body, str):
            return self._envelope(400, "Invalid JSON payload received. Unexpected token.", {})
        unknown = sorted(set(body) - _GEMINI_FIELDS)
        if unknown:
            return self._envelope(
                400,
                f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
                {},
                details=[
                    {
                        "@type": _RPC + "BadRequest",
                        "fieldViolations": [
                            {
                                "description": f"Invalid JSON payload received. Unknown name"
                                f' "{unknown[0]}": Cannot find field.'
                            }
                        ],
                    }
                ],
            )
        if not body.get("contents"):
            return self._envelope(
                400, "* GenerateContentRequest.contents: contents is not specified\n", {}
            )
        return None

    def question(self, body: Json) -> str:
        contents = body.get("contents")
        return _last_user(contents, content_key="parts") if isinstance(contents, list) else ""

    def streams(self, request: httpx.Request, body: Json) -> bool:
        return request.url.path.endswith(":streamGenerateContent")

    def _envelope(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str],
        *,
        rpc_status: str | None = None,
        details: list[Json] | None = None,
    ) -> httpx.Response:
        error: Json = {
            "code": status,
            "message": message,
            "status": rpc_status or _GEMINI_STATUS.get(status, "UNKNOWN"),
        }
        if details:
            error["details"] = details
        return _json_response(status, {"error": error}, headers)

    def _not_found(self, model: str, headers: Mapping[str, str]) -> httpx.Response:
        return self._envelope(
            404,
            f"models/{model} is not found for API version v1beta, or is not supported for"
            " generateContent. Call ListModels to see the list of available models and their"
            " supported methods.",
            headers,
        )

    def _usage(self, call: _Call, output_tokens: int | None) -> Json:
        usage: Json = {
            "promptTokenCount": call.input_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": call.input_tokens}],
        }
        if output_tokens is None:
            usage["totalTokenCount"] = call.input_tokens
        else:
            usage["candidatesTokenCount"] = output_tokens
            usage["totalTokenCount"] = call.input_tokens + output_tokens
        return usage

    def _response(self, call: _Call, candidate: Json | None, usage: Json, **extra: Any) -> Json:
        body: Json = {} if candidate is None else {"candidates": [candidate]}
        body.update(extra)
        body.update(usageMetadata=usage, modelVersion=call.model, responseId=call.tag)
        return body

    def _candidate(self, text: str | None, finish: str | None = None, **extra: Any) -> Json:
        candidate: Json = {}
        if text is not None:
            candidate["content"] = {"parts": [{"text": text}], "role": "model"}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate.update(extra)
        candidate["index"] = 0
        return candidate

    def answer(self, call: _Call, text: str) -> httpx.Response:
        body = self._response(
            call, self._candidate(text, "STOP"), self._usage(call, len(_deltas(text)))
        )
        return _json_response(200, body, self.headers(call))

    def stream(self, call: _Call, text: str) -> _Stream:
        pieces = _deltas(text)
        frames = [
            self._response(call, self._candidate(piece), self._usage(call, None))
            for piece in pieces
        ]
        last = self._response(call, self._candidate("", "STOP"), self._usage(call, len(pieces)))
        return self._frames(call, [], frames, [last])

    def _frames(
        self, call: _Call, head: list[Json], deltas: list[Json], tail: list[Json]
    ) -> _Stream:
        if call.request.url.params.get("alt") == "sse":
            return _Stream(
                [_sse(f, newline="\r\n") for f in head],
                [_sse(f, newline="\r\n") for f in deltas],
                [_sse(f, newline="\r\n") for f in tail],
                content_type="text/event-stream",
            )
        # Without alt=sse the stream endpoint sends one JSON array, element by element.
        frames = [_dumps(f) for f in head + deltas + tail]
        pieces = [(b"[" if i == 0 else b",\r\n") + f for i, f in enumerate(frames)]
        pieces[-1] += b"]"
        cut = len(head)
        return _Stream(
            pieces[:cut],
            pieces[cut : cut + len(deltas)],
            pieces[cut + len(deltas) :],
            content_type="application/json; charset=UTF-8",
        )

    def refusal(self, call: _Call) -> httpx.Response:
        # The answer was blocked: finishReason SAFETY, no content (reference §4.2).
        body = self._response(
            call,
            self._candidate(None, "SAFETY", safetyRatings=_GEMINI_SAFETY),
            self._usage(call, 0),
        )
        if call.stream:
            return self._frames(call, [], [], [body]).response(call.request, self.headers(call))
        return _json_response(200, body, self.headers(call))

    def blocked(self, call: _Call) -> httpx.Response:
        # The prompt was blocked: promptFeedback.blockReason and no candidates at all.
        body = self._response(
            call,
            None,
            self._usage(call, None),
            promptFeedback={"blockReason": "SAFETY", "safetyRatings": _GEMINI_SAFETY},
        )
        if call.stream:
            return self._frames(call, [], [], [body]).response(call.request, self.headers(call))
        return _json_response(200, body, self.headers(call))

    def error(self, call: _Call, status: int, retry_after: float | None) -> httpx.Response:
        headers = self.headers(call)
        details: list[Json] = []
        wait = ""
        if retry_after is not None:
            delay = f"{retry_after:.3f}".rstrip("0").rstrip(".") + "s"
            details.append({"@type": _RPC + "RetryInfo", "retryDelay": delay})
            wait = f"\nPlease retry in {delay}."
        if status == 401:
            # Gemini reports a bad key as 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
            info = {
                "@type": _RPC + "ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
            return self._envelope(
                400,
                "API key not valid. Please pass a valid API key.",
                headers,
                details=[info, *details],
            )
        if status == 404:
            return self._not_found(call.model, headers)
        if status == 429:
            message = (
                "You exceeded your current quota, please check your plan and billing details."
                " For more information on this error, head to:"
                " https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for"
                " metric: generativelanguage.googleapis.com/generate_content_free_tier_requests,"
                f" limit: 10, model: {call.model}" + wait
            )
            quota = self._quota_failure(
                call, "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", 10
            )
            return self._envelope(429, message, headers, details=[quota, *details])
        phrase = httpx.codes.get_reason_phrase(status) or "Error"
        return self._envelope(
            status, self.messages.get(status, phrase) + wait, headers, details=details
        )

    def _quota_failure(self, call: _Call, quota_id: str, limit: int) -> Json:
        return {
            "@type": _RPC + "QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/"
                    "generate_content_free_tier_requests",
                    "quotaId": quota_id,
                    "quotaDimensions": {"location": "global", "model": call.model},
                    "quotaValue": str(limit),
                }
            ],
        }

    def overflow(self, call: _Call) -> httpx.Response:
        window = call.deployment.context_window
        return self._envelope(
            400,
            f"The input token count ({window + call.input_tokens}) exceeds the maximum number"
            f" of tokens allowed ({window}).",
            self.headers(call),
        )

    def quota(self, call: _Call) -> httpx.Response:
        # A per-day quota: sticky until midnight Pacific, so not worth a retry.
        quota = self._quota_failure(call, "GenerateRequestsPerDayPerProjectPerModel-FreeTier", 250)
        return self._envelope(
            429,
            "You exceeded your current quota, please check your plan and billing details. For"
            " more information on this error, head to:"
            " https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric:"
            " generativelanguage.googleapis.com/generate_content_free_tier_requests, limit:"
            f" 250, model: {call.model}",
            self.headers(call),
            details=[quota],
        )

    def headers(self, call: _Call) -> dict[str, str]:
        return {"server": "scaffolding on HTTPServer2", "x-gemini-service-tier": "standard"}


# --------------------------------------------------------------------------- the transport


class SimClock(Clock, Sleeper, Protocol):
    """What the transport needs of time: the wall clock for timestamps, and waiting."""


_WIRES: Mapping[ProviderKind, _Wire] = {
    ProviderKind.OPENAI: _OpenAIWire(),
    ProviderKind.AZURE: _AzureWire(),
    ProviderKind.ANTHROPIC: _AnthropicWire(),
    ProviderKind.GEMINI: _GeminiWire(),
}


class SimulatedTransport(httpx.BaseTransport):
    """Fake provider servers, in process: every deployment answers at its simulated address.

    Give the provider adapters this transport and `simulated_deployment(d)` for each
    deployment. `calls` counts the requests each deployment received, faulted or not.
    A request for any other address fails like an unknown host: nothing leaves the process.
    """

    def __init__(
        self,
        deployments: Iterable[Deployment],
        faults: Mapping[str, Fault] | None = None,
        *,
        clock: SimClock,
    ) -> None:
        self._deployments = {d.name: d for d in deployments if d.provider is not ProviderKind.LOCAL}
        self._faults = dict(faults or {})
        self._clock = clock
        self._lock = threading.Lock()
        self.calls: dict[str, int] = dict.fromkeys(self._deployments, 0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deployment = self._deployment(request)
        wire = _WIRES[deployment.provider]
        with self._lock:
            self.calls[deployment.name] += 1
            number = self.calls[deployment.name]
        rejected = wire.reject(request, deployment)
        if rejected is not None:
            return rejected
        body = _load(request)
        assert isinstance(body, dict)  # reject() answered anything else
        call = _Call(
            request=request,
            body=body,
            deployment=deployment,
            number=number,
            question=wire.question(body),
            stream=wire.streams(request, body),
            input_tokens=_estimate_tokens(request.content),
            now=self._clock.wall(),
        )
        fault = self._faults.get(deployment.name)
        step = None if fault is None else fault.at(number)
        return self._respond(wire, call, step)

    def _deployment(self, request: httpx.Request) -> Deployment:
        name = request.url.path.lstrip("/").split("/", 1)[0]
        deployment = self._deployments.get(name) if request.url.host == SIM_HOST else None
        if deployment is None:
            raise httpx.ConnectError(
                f"simulated transport: no deployment at {request.url.host}/{name}"
                " (pass simulated_deployment(d) to the adapter)",
                request=request,
            )
        return deployment

    def _respond(self, wire: _Wire, call: _Call, step: Step | None) -> httpx.Response:
        request = call.request
        if step is None:
            text = answer_text(call.name, call.question)
            if call.stream:
                return wire.stream(call, text).response(request, wire.headers(call))
            return wire.answer(call, text)
        match step.kind:
            case FaultKind.STATUS:
                assert step.status is not None
                return wire.error(call, step.status, step.retry_after)
            case FaultKind.TIMEOUT:
                self._wait(self._read_timeout(request))
                raise httpx.ReadTimeout("The read operation timed out", request=request)
            case FaultKind.CUT if call.stream:
                text = answer_text(call.name, call.question)
                stream = wire.stream(call, text)
                return stream.response(request, wire.headers(call), cut=step.tokens)
            case FaultKind.RESET | FaultKind.CUT:
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                )
            case FaultKind.REFUSAL:
                return wire.refusal(call)
            case FaultKind.BLOCKED:
                return wire.blocked(call)
            case FaultKind.OVERFLOW:
                return wire.overflow(call)
            case FaultKind.QUOTA:
                return wire.quota(call)
            case FaultKind.OK:  # pragma: no cover - Fault.at never hands out OK
                return self._respond(wire, call, None)
        raise AssertionError(f"unhandled fault {step}")  # pragma: no cover

    @staticmethod
    def _read_timeout(request: httpx.Request) -> float:
        timeout = request.extensions.get("timeout") or {}
        read = timeout.get("read") if isinstance(timeout, dict) else None
        return float(read) if read is not None else _DEFAULT_READ_TIMEOUT

    def _wait(self, seconds: float) -> None:
        # Virtual time moves the clock without recording a sleep: the engine did not
        # choose to wait, the server just never answered.
        if isinstance(self._clock, VirtualClock):
            self._clock.advance(seconds)
        else:
            self._clock.sleep(seconds)
