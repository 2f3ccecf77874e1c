"""What every fake Batch API shares: the plan a job follows, its progress look by look,
and the httpx transport around a server's `serve`."""

from __future__ import annotations

import itertools
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import httpx

from gateway.providers.batchapi.records import Caps

Answer = Callable[[str], str]
"""The question (the request's last customer turn) -> the model's answer text."""


def cite_first(question: str) -> str:
    """The default answer: short, citing the first passage, as a model following the
    prompt would."""
    return f"Here is what the help centre says about that [1]. ({question[:40]})"


class Outcome(StrEnum):
    """What one request of a job gets."""

    ANSWER = "answer"
    ERROR = "error"  # the provider failed it (a server error for this one request)
    EXPIRED = "expired"  # the completion window ended before it ran
    CANCELED = "canceled"  # the job was cancelled before it ran


@dataclass(frozen=True)
class BatchPlan:
    """How a job goes: `errored` and `expired` are positions (0-based, in the order
    sent); `cancel_from`: the job is cancelled and every request from that position on
    is left unrun; `rejected`: the whole job fails validation; `looks`: how many looks
    at it before it is over (0: over at the first)."""

    errored: frozenset[int] = frozenset()
    expired: frozenset[int] = frozenset()
    cancel_from: int | None = None
    rejected: bool = False
    looks: int = 1
    answer: Answer = field(default=cite_first, compare=False)

    def outcome(self, position: int) -> Outcome:
        if self.cancel_from is not None and position >= self.cancel_from:
            return Outcome.CANCELED
        if position in self.expired:
            return Outcome.EXPIRED
        if position in self.errored:
            return Outcome.ERROR
        return Outcome.ANSWER


@dataclass
class Job:
    """One job as a fake server holds it: its requests (custom id, body), looks left."""

    id: str
    requests: list[tuple[str, Mapping[str, object]]]
    looks_left: int
    rejected: bool
    cancelled: bool
    extra: dict[str, object] = field(default_factory=dict)

    def look(self) -> bool:
        """One look; whether the job is over after it."""
        if self.looks_left > 0:
            self.looks_left -= 1
        return self.over

    @property
    def over(self) -> bool:
        return self.looks_left == 0 or self.rejected


class BatchServer(httpx.BaseTransport, ABC):
    """A fake Batch API. `jobs` holds every job created; `calls` every (method, path).
    `caps`: what one job may hold (None: the provider's own are far past any test's), a
    job beyond them refused as its provider refuses one."""

    def __init__(
        self, plan: BatchPlan | None = None, *, key: str | None = None, caps: Caps | None = None
    ) -> None:
        self.plan = plan if plan is not None else BatchPlan()
        self.key = key  # the key it accepts (None: any)
        self.caps = caps if caps is not None else Caps()
        self.jobs: dict[str, Job] = {}
        self.calls: list[tuple[str, str]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def beyond_caps(self, requests: int, size: int) -> str | None:
        """Why a job of `requests` requests in `size` bytes is refused (None: it is not)."""
        most, largest = self.caps.requests, self.caps.bytes
        if most is not None and requests > most:
            return f"the batch holds {requests} requests, more than the {most} allowed"
        if largest is not None and size > largest:
            return f"the batch's input is {size} bytes, more than the {largest} allowed"
        return None

    def new_job(self, job_id: str, requests: list[tuple[str, Mapping[str, object]]]) -> Job:
        job = Job(
            job_id,
            requests,
            looks_left=self.plan.looks,
            rejected=self.plan.rejected,
            cancelled=self.plan.cancel_from is not None,
        )
        self.jobs[job_id] = job
        return job

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        status, body, headers = self.serve(
            request.method, str(request.url), dict(request.headers), request.read()
        )
        return httpx.Response(status, content=body, headers=headers)

    def serve(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        """One exchange: (status, body, headers)."""
        parsed = httpx.URL(url)
        with self._lock:
            self.calls.append((method, parsed.path))
            return self.route(method, parsed, {k.lower(): v for k, v in headers.items()}, body)

    @abstractmethod
    def route(
        self, method: str, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]: ...


def as_json(status: int, data: object) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps(data).encode(), {"content-type": "application/json"}


def jsonl(rows: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def multipart(headers: Mapping[str, str], body: bytes) -> dict[str, bytes]:
    """The parts of a multipart/form-data body, by name."""
    ctype = headers.get("content-type", "")
    boundary = ctype.partition("boundary=")[2].strip('"')
    parts: dict[str, bytes] = {}
    if not boundary:
        return parts
    for chunk in body.split(b"--" + boundary.encode()):
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            continue
        name = head.decode("latin-1").partition('name="')[2].partition('"')[0]
        if name:
            parts[name] = content.removesuffix(b"\r\n")
    return parts


def last_text(turns: object, text_of: Callable[[Mapping[str, object]], str]) -> str:
    """The last turn's text of a list of turns (the question)."""
    if isinstance(turns, list) and turns and isinstance(turns[-1], dict):
        return text_of(turns[-1])
    return ""
