"""ProviderErrors for what the wire protocol itself proves wrong.

Not an HTTP error status or a foreign exception (those the client hands to
`gateway.classify.errors` to classify), but a 2xx that breaks the protocol: a body that is not
JSON, a stream cut before its end marker, an error inside a 200, the attempt's deadline.
"""

from __future__ import annotations

from gateway.engine.table import TABLE
from gateway.model import ErrorKind, Failure, ProviderError, Reply, Timer
from gateway.record import replace
from gateway.secrets.shapes import redact_text


def protocol_failure(kind: ErrorKind, detail: str) -> ProviderError:
    """A failure the wire protocol itself proves (no HTTP error to classify): a 2xx body
    that is not JSON, a stream cut before its end marker, the attempt's deadline.

    The kind is what the protocol says happened; what to do about it is the engine's
    table's (`gateway.engine.table`), so nothing is decided here.
    """
    return ProviderError(Failure(kind, TABLE[kind].decision, redact_text(detail)))


def stream_error(payload: object, *, now: float) -> ProviderError:
    """An error carried inside a 200 (an error event or frame, an error choice)."""
    from gateway.classify import errors

    return ProviderError(errors.classify_stream_error(payload, now=now))


def malformed(detail: str) -> ProviderError:
    """A 2xx whose body breaks the protocol: the server's fault, as the classifier reads
    an undecodable body."""
    return protocol_failure(ErrorKind.SERVER, detail)


def truncated(detail: str = "the stream ended before the model finished") -> ProviderError:
    """A stream that stopped without its end marker: a dropped connection, in effect."""
    return protocol_failure(ErrorKind.NETWORK, detail)


def unfinished(refused: Reply | None) -> Reply:
    """How a stream that ended without its end marker reads: the refusal it had already
    signalled (`StreamParser.refused_so_far`) is the answer; anything else was cut short."""
    if refused is None:
        raise truncated()
    return refused


def timed_out(detail: str, timer: Timer, *, silent: bool) -> ProviderError:
    """One of the attempt's deadlines ran out (`silent`: before any response arrived)."""
    err = protocol_failure(ErrorKind.TIMEOUT, detail)
    return ProviderError(replace(err.failure, timer=timer, silent=silent))
