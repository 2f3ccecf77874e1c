"""Scripted fake providers for engine tests, in the spirit of a scripted mock model.

Each fake plays a script of outcomes in order (the last one repeats): a Reply to answer,
a Failure to raise, or a Stream that hands text out and then either ends or breaks.
It advances a VirtualClock by how long each call "takes", so budgets can be exercised
without sleeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.engine.table import TABLE
from gateway.model import (
    ErrorKind,
    Failure,
    ProviderError,
    Reply,
    Request,
    TextSink,
)
from gateway.secrets.key import Secret


@dataclass(frozen=True)
class Stream:
    chunks: tuple[str, ...]
    then: Failure | None = None  # None: the stream ends cleanly


Step = Reply | Failure | Stream


@dataclass
class ScriptedProvider:
    name: str
    script: list[Step]
    clock: VirtualClock | None = None
    takes: float = 0.0  # virtual seconds each call lasts (capped by its timeout)
    requests: list[Request] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)
    first_tokens: list[float | None] = field(default_factory=list)
    stalls: list[float | None] = field(default_factory=list)
    keys: list[Secret | None] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def complete(
        self,
        request: Request,
        *,
        timeout: float,
        on_text: TextSink | None = None,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply:
        self.requests.append(request)
        self.timeouts.append(timeout)
        self.first_tokens.append(first_token)
        self.stalls.append(stall)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if self.clock is not None:
            self.clock.advance(min(self.takes, timeout))
            if self.takes > timeout:
                raise ProviderError(failure(ErrorKind.TIMEOUT, detail="read timed out"))
        if isinstance(step, Failure):
            raise ProviderError(step)
        if isinstance(step, Stream):
            written = ""
            for chunk in step.chunks:
                if on_text is not None:
                    on_text(chunk)
                written += chunk
            if step.then is not None:
                raise ProviderError(step.then, partial=written)
            return Reply(text=written, finish_reason="stop", model=f"{self.name}-model")
        return step


class ScriptedFactory:
    """The ProviderFactory seam: hands out the scripted fake for each deployment."""

    def __init__(self, providers: Sequence[ScriptedProvider]) -> None:
        self.by_name = {p.name: p for p in providers}
        self.built: list[str] = []

    def __call__(self, deployment: Deployment, key: Secret | None) -> ScriptedProvider:
        self.built.append(deployment.name)
        provider = self.by_name[deployment.name]
        provider.keys.append(key)
        return provider


_STATUS = {
    ErrorKind.RATE_LIMIT: 429,
    ErrorKind.OVERLOADED: 529,
    ErrorKind.SERVER: 500,
    ErrorKind.TIMEOUT: None,
    ErrorKind.NETWORK: None,
    ErrorKind.UNKNOWN: 418,
    ErrorKind.QUOTA: 429,
    ErrorKind.AUTH: 401,
    ErrorKind.MODEL_NOT_FOUND: 404,
    ErrorKind.CONTEXT_WINDOW: 400,
    ErrorKind.BAD_REQUEST: 400,
    ErrorKind.REFUSAL: 400,
}


def failure(
    kind: ErrorKind,
    *,
    retry_after: float | None = None,
    detail: str | None = None,
    code: str | None = None,
) -> Failure:
    """A failure as the classifier would report it for `kind` (its decision from the one table)."""
    return Failure(
        kind=kind,
        decision=TABLE[kind].decision,
        detail=detail or f"simulated {kind}",
        status=_STATUS[kind],
        retry_after=retry_after,
        code=code,
    )


def answer(text: str) -> Reply:
    return Reply(text=text, finish_reason="stop", model="fake-model")
