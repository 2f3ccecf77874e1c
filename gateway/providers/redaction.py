"""The redacting wrapper: a provider whose answers, streamed text and errors carry none of
the run's known secrets (`gateway.secrets.redactor`), so nothing a proxy echoes back
reaches the answer, the JSON, the attempt log or the state file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.model import ProviderError, Reply, Request, TextSink
from gateway.record import replace
from gateway.secrets.redactor import Redactor, StreamScrubber
from gateway.secrets.shapes import redact_text

if TYPE_CHECKING:
    from gateway.seams import Provider


class RedactingProvider:
    """A provider whose answers, streamed text and errors carry none of the run's secrets."""

    __slots__ = ("_inner", "_redactor")

    def __init__(self, inner: Provider, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor

    def __repr__(self) -> str:
        return f"RedactingProvider({self._inner!r})"

    def complete(
        self,
        request: Request,
        *,
        timeout: float,
        on_text: TextSink | None = None,
        first_token: float | None = None,
        stall: float | None = None,
    ) -> Reply:
        scrub = self._redactor.scrub
        stream = None if on_text is None else StreamScrubber(self._redactor, on_text)
        try:
            reply = self._inner.complete(
                request, timeout=timeout, on_text=stream, first_token=first_token, stall=stall
            )
        except ProviderError as err:
            if stream is not None:
                stream.flush()  # the user sees what arrived, as without redaction
            # A detail is never the answer: what is shaped like a key goes too, whoever's.
            detail = redact_text(scrub(err.failure.detail))
            failure = replace(err.failure, detail=detail)
            raise ProviderError(failure, partial=scrub(err.partial)) from None
        if stream is not None:
            stream.flush()
        text = scrub(reply.text)
        model = None if reply.model is None else scrub(reply.model)
        if text is reply.text and model is reply.model:
            return reply  # nothing to cut (`scrub` hands back what it was given): no copy
        return replace(reply, text=text, model=model)

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()
