"""How a question ends: each deployment's verdict when it did not answer, and the result.

A question ends with the attempt that answered, refused, stopped or hit a request no
deployment can fix (`policy.Ending`), or with every deployment's verdict: why it did not
answer; or the run is stopped midway, and what the question did so far is its result.
The verdicts decide what the customer is told: too large for every window, try again
later (each one is cooling down, out of time, or failed in a way that clears by itself),
or no deployment could answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import NamedTuple

from gateway.config import Deployment
from gateway.engine.fitting import Fitting
from gateway.engine.policy import Answered, Ending, Fatal, Refused, Stopped
from gateway.model import (
    Attempt,
    DeploymentError,
    ErrorKind,
    Failure,
    FailureKind,
    QuestionError,
    Refusal,
    RefusedBy,
    Reply,
    Result,
    Status,
    Usage,
)
from gateway.record import replace
from gateway.seams import Clock


class Reason(Enum):
    """Why a deployment did not answer."""

    TOO_SMALL = "too small"  # its window cannot hold the input, not even compacted
    OVERFLOWED = "overflowed"  # it reported that the input overflowed its window
    NO_KEY = "no key"  # no usable key: not set, or not a key
    COOLING = "cooling"  # cooling down, or another invocation is sending its one probe
    HELD = "held"  # cooled by another question of this process since this one began
    OUT_OF_TIME = "out of time"  # the budget ran out before (or while) it could be called
    FAILED_FOR_NOW = "failed for now"  # its last call failed in a way that clears by itself
    FAILED = "failed"  # its last call failed


# An answer's status, read once (a member read through its enum class costs ~900
# instructions on Python 3.11: `EnumType.__getattr__`'s hook).
_ANSWERED = Status.ANSWERED

# Reasons that could clear by themselves: when they are all there is, "retry later".
_TRANSIENT = frozenset({Reason.COOLING, Reason.HELD, Reason.OUT_OF_TIME, Reason.FAILED_FOR_NOW})


class Verdict(NamedTuple):
    """How one deployment ended when it did not answer. (A NamedTuple: every question
    imports this module, and defining one costs a fifth of a frozen dataclass.)"""

    reason: Reason
    detail: str  # its line in the question's error
    kind: ErrorKind | None = None  # what its last call failed with, when it was called

    @property
    def transient(self) -> bool:
        return self.reason in _TRANSIENT


# The order `Results.result` gives a `Result` its fields in, by position. Several
# neighbours share a type (three names, three token counts), so a field added to or moved
# in `Result` would type-check and still land in the wrong place: a test holds this to the
# record's own order, so such a change fails there rather than in a script's JSON.
RESULT_ORDER = (
    "status", "answer", "deployment", "provider", "model", "routed", "input_tokens",
    "elapsed_s", "attempts", "error", "incomplete", "finish_reason", "refusal", "usage",
    "input_tokens_exact", "articles", "masked", "turns", "turns_left_out", "turn_tokens",
    "language", "action", "handoff", "citations", "citations_dropped",
)  # fmt: skip


class Results:
    """Builds one question's result from what it sent and what it recorded."""

    def __init__(
        self, fitting: Fitting, attempts: Sequence[Attempt], clock: Clock, start: float
    ) -> None:
        self.fitting = fitting
        self.attempts = attempts
        self.clock = clock
        self.start = start

    def ended(self, d: Deployment, ending: Ending, usage: Usage | None = None) -> Result:
        """The result of the attempt of `d` that ended the question; `usage` is its reply's
        as its row recorded it (None: worked out here)."""
        match ending:
            case Answered(reply=reply):
                return self.answered(d, reply, usage)
            case Refused(text=text, by=by, reply=reply):
                # The model's refusal is its answer, as is; the provider's filter wrote
                # none, and its explanation is no answer to show the customer.
                return self.result(
                    Status.REFUSED,
                    d,
                    answer=text if by is RefusedBy.MODEL else None,
                    reply=reply,
                    refusal=Refusal(by, text),
                    usage=usage,
                )
            case Stopped(failure=failure, partial=partial, reply=reply):
                verb = "was cut short" if reply is not None else "broke off"
                error = QuestionError(
                    FailureKind.INCOMPLETE,
                    f"the answer from {d.name} {verb}: {failure.detail}",
                    (DeploymentError(d.name, failure.detail),),
                )
                return self.result(
                    Status.FAILED,
                    d,
                    partial,
                    reply,
                    error=error,
                    incomplete=True,
                    usage=usage,
                )
            case Fatal(failure=failure):
                error = QuestionError(
                    FailureKind.BAD_REQUEST,
                    f"{d.name} rejected the request as malformed: {failure.detail}",
                    (DeploymentError(d.name, failure.detail),),
                )
                return self.result(Status.FATAL, d, error=error)
        raise AssertionError(f"not an ending of the question: {ending!r}")

    def answered(self, d: Deployment, reply: Reply, usage: Usage | None = None) -> Result:
        """The result of `d`'s reply that answered; `usage` as its row recorded it."""
        return self.result(_ANSWERED, d, reply.text, reply, usage=usage)

    def failed(
        self,
        verdicts: Mapping[str, Verdict],
        shown: tuple[Deployment, str, Failure] | None,
        kept: tuple[Deployment, Reply, Failure] | None,
    ) -> Result:
        """The result when no deployment answered: `shown` is a broken attempt whose text
        is on the customer's screen, `kept` the first cut-short reply."""
        lines = tuple(DeploymentError(name, v.detail) for name, v in verdicts.items())
        if shown is not None:
            # No restart came: what the customer reads is the broken attempt's text.
            d, text, failure = shown
            error = QuestionError(
                FailureKind.INCOMPLETE,
                f"the answer from {d.name} broke off ({failure.detail}) and no other "
                "attempt could answer",
                lines,
            )
            return self.result(Status.FAILED, d, answer=text, error=error, incomplete=True)
        if kept is not None:
            # Nothing better came: the cut-short answer, never passed off as a whole one.
            d, reply, failure = kept
            error = QuestionError(
                FailureKind.INCOMPLETE,
                f"the only answer, from {d.name}, was cut short: {failure.detail}",
                lines,
            )
            return self.result(
                Status.FAILED, d, answer=reply.text, reply=reply, error=error, incomplete=True
            )
        # Every deployment has a verdict by now (tried, skipped, or dropped after an
        # overflow, with its reason): "too large" is said only when each one says so.
        too_large = (Reason.TOO_SMALL, Reason.OVERFLOWED)
        if verdicts and all(v.reason in too_large for v in verdicts.values()):
            error = QuestionError(
                FailureKind.TOO_LARGE,
                f"the input ({self.fitting.input_tokens:,} tokens) is too large for "
                "every deployment: each overflowed or has a smaller window",
                lines,
            )
            return self.result(Status.FATAL, None, error=error)
        transient = [v for v in verdicts.values() if v.transient]
        if transient and all(v.transient or v.reason is Reason.NO_KEY for v in verdicts.values()):
            error = QuestionError(FailureKind.UNAVAILABLE, _unavailable(verdicts), lines)
        else:
            error = QuestionError(FailureKind.EXHAUSTED, "no deployment could answer", lines)
        return self.result(Status.FAILED, None, error=error)

    def interrupted(self, d: Deployment | None) -> Result:
        """The result of a question the run was stopped in (Ctrl-C, a signal): its attempts
        so far, no answer, and the input of `d`, the deployment it was asking (None: none
        yet), counted as that one was sent it."""
        error = QuestionError(FailureKind.INTERRUPTED, "interrupted")
        result = self.result(Status.FAILED, d, error=error)
        # Nobody answered: the question names no deployment, as any failure that no
        # deployment's reply ended.
        return replace(result, deployment=None, provider=None, model=None)

    def result(
        self,
        status: Status,
        d: Deployment | None,
        answer: str | None = None,
        reply: Reply | None = None,
        *,
        error: QuestionError | None = None,
        incomplete: bool = False,
        refusal: Refusal | None = None,
        usage: Usage | None = None,
    ) -> Result:
        """The question's result; `reply` is the one whose text is `answer`, if any, and
        `usage` its usage when already worked out."""
        if usage is None:
            usage = Usage() if reply is None else Usage.of(reply)
        sent, input_tokens, exact = self.fitting.sent(d)
        # Every field by position, in RESULT_ORDER (keywords, or fields left to their
        # defaults, cost the record's constructor more); what `gateway.answers` settles
        # later (action, handoff, citations, citations_dropped) is nothing yet.
        return Result(
            status,
            answer,
            None if d is None else d.name,
            None if d is None else str(d.provider),
            (None if reply is None else reply.model) or (None if d is None else d.model),
            self.fitting.plan.route,
            input_tokens,
            self.clock.monotonic() - self.start,
            tuple(self.attempts),
            error,
            incomplete,
            None if reply is None else reply.finish_reason,
            refusal,
            usage,
            exact,
            sent.sources,
            (),
            len(sent.turns),
            sent.turns_left_out,
            sent.turn_tokens,
            sent.language,
            None,
            None,
            (),
            0,
        )


def _unavailable(verdicts: Mapping[str, Verdict]) -> str:
    """Exit 75's one line, saying what happened to each deployment and no more: "cooling
    down" only for one that is, "no time left" only when the budget ran out."""

    def named(which: list[str], says: str) -> str:
        verb = "is" if len(which) == 1 else "are"
        return f"{', '.join(which)} {says.format(verb=verb)}"

    def having(reason: Reason) -> list[str]:
        return [name for name, v in verdicts.items() if v.reason is reason]

    cooling, late, unset = having(Reason.COOLING), having(Reason.OUT_OF_TIME), having(Reason.NO_KEY)
    failed = [(name, v.kind) for name, v in verdicts.items() if v.reason is Reason.FAILED_FOR_NOW]
    parts = [
        *([named(cooling, "{verb} cooling down")] if cooling else []),
        *(f"{name} failed ({kind})" for name, kind in failed),
        *([named(late, "had no time left in the budget")] if late else []),
        *([named(unset, "cannot be called (no key)")] if unset else []),
    ]
    return "no deployment can answer for now: " + "; ".join(parts) + "; retry later"
