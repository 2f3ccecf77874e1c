"""What each kind of failure means to the engine: one row per `ErrorKind`, read by every rule.

The classifier says what kind a reply is; this table says what that kind means: the
default decision (retry here, fail over, or end the question), whether giving up on a
deployment for it cools the deployment down, whether it clears by itself, and whether it is
the key's failure rather than the provider's. Policy reads it to decide, the loop to know
whose failure it was, the attempt log to say what cooled; the classifier and the adapters
stamp a failure with its kind's default decision from here. So this module sits with the
rules below the engine (tests/architecture/test_layers.py), and imports only the vocabulary:
every question imports it, and one that goes well still imports no classifier.

Rows are NamedTuples rather than dataclasses for the same reason as credentials' `Key`:
defining one costs a fifth of a frozen dataclass, on every question's path.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from gateway.model import Decision, ErrorKind


class Row(NamedTuple):
    """What one kind of failure means. Each flag is False unless its row says so."""

    decision: Decision  # the default, which a server's x-should-retry may overrule
    # Giving up on the deployment for this kind (retries spent, or an immediate fail-over)
    # cools it down: a timed skip, shared by every invocation.
    cools: bool = False
    # It clears by itself: when it is why a deployment could not answer, the question as a
    # whole is "try again later" rather than "broken".
    transient: bool = False
    # The key's, not the provider's: it cools the pair (deployment, key), and the
    # deployment's next key is tried at once; another key may well work now.
    key_scoped: bool = False
    # Read from a 2xx reply that is no answer (`policy.not_an_answer`), never from an error.
    from_answer: bool = False


_RETRY, _FAIL_OVER, _FATAL = Decision.RETRY, Decision.FAIL_OVER, Decision.FATAL

TABLE: Mapping[ErrorKind, Row] = MappingProxyType(
    {
        # Transient: retry the same deployment; cool it down once its retries are spent. A
        # rate limit is counted per key (and per model or deployment): it is the key's.
        ErrorKind.RATE_LIMIT: Row(_RETRY, cools=True, transient=True, key_scoped=True),
        ErrorKind.OVERLOADED: Row(_RETRY, cools=True, transient=True),
        ErrorKind.SERVER: Row(_RETRY, cools=True, transient=True),
        ErrorKind.TIMEOUT: Row(_RETRY, cools=True, transient=True),
        ErrorKind.NETWORK: Row(_RETRY, cools=True, transient=True),
        # Unknown retries too: an error we cannot read must not retire a healthy deployment
        # for long, so it gets the same timed cooldown as any transient failure.
        ErrorKind.UNKNOWN: Row(_RETRY, cools=True, transient=True),
        # This key cannot serve anyone until a human acts (or a quota resets).
        ErrorKind.QUOTA: Row(_FAIL_OVER, cools=True, key_scoped=True),
        ErrorKind.AUTH: Row(_FAIL_OVER, cools=True, key_scoped=True),
        # Nor this deployment, whichever key it is called with.
        ErrorKind.MODEL_NOT_FOUND: Row(_FAIL_OVER, cools=True),
        # The input is at fault, not the deployment: try a bigger window, keep this one warm.
        ErrorKind.CONTEXT_WINDOW: Row(_FAIL_OVER),
        # No deployment can fix these; a refusal is the answer.
        ErrorKind.BAD_REQUEST: Row(_FATAL),
        ErrorKind.REFUSAL: Row(_FATAL),
        # A 200 that is not a usable answer. Cut short by the output limit: the same input
        # would be cut the same way here (a reasoning model spends the limit thinking, a
        # verbose one runs past it), and another model may well finish inside it, so fail
        # over, and keep this healthy deployment warm.
        ErrorKind.OUTPUT_LIMIT: Row(_FAIL_OVER, from_answer=True),
        # No text at all: a known intermittent glitch (Gemini's content-less candidate), so
        # worth a retry, and a cooldown once the retries keep getting nothing.
        ErrorKind.EMPTY: Row(_RETRY, cools=True, from_answer=True),
    }
)
