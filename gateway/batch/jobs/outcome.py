"""One request of a provider batch job as the Result every record is built from: the
provider's reply read as the engine reads one (an answer, a refusal; cut short or empty
is no answer), one row in its attempts table, its cost at the batch price. A request the
provider failed, expired or cancelled is no Result here: the caller asks it again through
the engine, or (`--no-fallback`) records it as `failed_result` says."""

from __future__ import annotations

from enum import StrEnum

from gateway.config import Deployment
from gateway.model import (
    Attempt,
    DeploymentError,
    FailureKind,
    Outcome,
    QuestionError,
    Refusal,
    RefusedBy,
    Request,
    Result,
    Route,
    Status,
    Usage,
)
from gateway.providers.batchapi import ItemKind, ItemResult


class AnsweredVia(StrEnum):
    """Which way a question of a provider batch was answered: the record's `answered_via`."""

    BATCH = "batch"  # by the provider's Batch API, at the batch price
    ENGINE = "engine"  # the batch failed or expired it: asked again through the engine
    NOT_ASKED = "not_asked"  # the help centre does not cover it: handed off, never sent


def batch_result(
    item: ItemResult, request: Request, deployment: Deployment, *, batch_id: str
) -> Result | None:
    """The Result of a request the provider answered; None when its reply is no answer
    (it failed, expired, was cancelled, was cut short or empty)."""
    reply = item.reply
    if item.kind is not ItemKind.SUCCEEDED or reply is None:
        return None
    if not reply.refused and (reply.cut_short is not None or not reply.text.strip()):
        return None
    usage = Usage.of(reply)
    cost = None
    if deployment.price is not None:
        cost = deployment.price.batch_cost_usd(reply.input_tokens, reply.output_tokens)
    attempt = Attempt(
        deployment=deployment.name,
        attempt=1,
        status=200,
        error_class=None,
        outcome=Outcome.ANSWERED,
        wait_s=0.0,
        elapsed_s=0.0,
        detail=f"batch {batch_id}",
        key=deployment.api_key_env,
        usage=usage,
        cost_usd=cost,
    )
    refusal = None
    status: Status = Status.ANSWERED
    answer: str | None = reply.text
    if reply.refused:
        by = RefusedBy.PROVIDER if reply.filtered else RefusedBy.MODEL
        refusal = Refusal(by, reply.text)
        status, answer = Status.REFUSED, reply.text if by is RefusedBy.MODEL else None
    return _result(
        request,
        deployment,
        (attempt,),
        status=status,
        answer=answer,
        usage=usage,
        model=reply.model,
        finish_reason=reply.finish_reason,
        refusal=refusal,
    )


def failed_result(
    item: ItemResult | None, request: Request, deployment: Deployment, *, batch_id: str
) -> Result:
    """The record of a request the batch did not answer, not asked again: one that
    expired or was cancelled may succeed later (exit 75's kind); one that errored, or that
    the provider reported nothing for, did not."""
    if item is None:
        kind, detail = FailureKind.EXHAUSTED, "the batch's results do not hold it"
    elif item.kind in (ItemKind.EXPIRED, ItemKind.CANCELED):
        kind, detail = FailureKind.UNAVAILABLE, f"{item.kind} in the batch"
    else:
        kind, detail = FailureKind.EXHAUSTED, item.detail or str(item.kind)
    error = QuestionError(
        kind,
        f"batch {batch_id} did not answer it ({detail}); --no-fallback: not asked again",
        (DeploymentError(deployment.name, detail),),
    )
    return _result(request, deployment, (), status=Status.FAILED, answer=None, error=error)


def _result(
    request: Request,
    deployment: Deployment,
    attempts: tuple[Attempt, ...],
    *,
    status: Status,
    answer: str | None,
    usage: Usage | None = None,
    model: str | None = None,
    finish_reason: str | None = None,
    refusal: Refusal | None = None,
    error: QuestionError | None = None,
) -> Result:
    from gateway.tokens import estimate

    answered = status is not Status.FAILED
    return Result(
        status=status,
        answer=answer,
        deployment=deployment.name if answered else None,
        provider=str(deployment.provider) if answered else None,
        model=(model or deployment.model) if answered else None,
        routed=Route.NORMAL,
        input_tokens=estimate(request.text),
        input_tokens_exact=False,
        elapsed_s=0.0,
        attempts=attempts,
        error=error,
        finish_reason=finish_reason,
        refusal=refusal,
        usage=usage or Usage(),
        articles=request.sources,
        turns=len(request.turns),
        turns_left_out=request.turns_left_out,
        turn_tokens=request.turn_tokens,
        language=request.language,
    )
