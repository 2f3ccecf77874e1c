"""The engine's decisions as pure functions: what to do after a failure, what to call at all.

No I/O and no clock reads: the engine passes in the time, the budget and the random draw,
then carries out the returned step. Every rule about retrying, failing over, cooling down
and routing lives here, over what each kind of failure means (`gateway.engine.table`), so
it can be read (and tested) in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import NamedTuple, TypeGuard

from gateway.config import Config, Deployment, Policy
from gateway.engine.backoff import Budget, backoff_delay, retry_after_wait
from gateway.engine.table import TABLE
from gateway.model import (
    CooldownBasis,
    Decision,
    ErrorKind,
    Failure,
    Outcome,
    RefusedBy,
    Reply,
    Route,
    Timer,
)
from gateway.record import record


@record
class Step:
    """What to do after one failed attempt.

    `cooldown` is how long to cool the deployment down (None: not at all). `transient`
    marks a fail-over that a later try could clear by itself (a rate limit past the budget),
    which turns "no deployment could answer" into "temporarily unavailable".
    """

    outcome: Outcome
    wait: float = 0.0
    cooldown: float | None = None
    transient: bool = False
    note: str = ""


def _cooldown_for(failure: Failure, policy: Policy) -> float | None:
    """How long giving up on `failure` cools the deployment (or key), None: not at all.

    A server that named a wait knows better than our default: never come back sooner, but
    never later than max_cooldown (a single absurd Retry-After must not shut a deployment
    out for a week). A billing or quota failure with no reset named is not over in a
    minute: it cools for quota_cooldown, so every invocation does not hit it again.
    """
    if not TABLE[failure.kind].cools:
        return None
    if failure.retry_after is not None and failure.retry_after > 0:
        return min(policy.max_cooldown, max(policy.cooldown, failure.retry_after))
    if failure.kind is ErrorKind.QUOTA:
        return policy.quota_cooldown
    return policy.cooldown


def cooldown_basis(failure: Failure, policy: Policy) -> CooldownBasis:
    """Where the length `_cooldown_for` gives comes from: what `support-ask cooldowns`
    says about how a cooldown will end."""
    wait = failure.retry_after
    if wait is not None and wait > policy.cooldown:
        return CooldownBasis.CAPPED if wait > policy.max_cooldown else CooldownBasis.PROVIDER
    if failure.kind is ErrorKind.QUOTA and not (wait is not None and wait > 0):
        return CooldownBasis.QUOTA
    return CooldownBasis.POLICY


def next_step(
    failure: Failure,
    *,
    retries_done: int,
    policy: Policy,
    budget: Budget,
    now: float,
    rand: float,
    took: float = 0.0,
    alternatives: bool = False,
) -> Step:
    """Decide what follows a failure on one deployment.

    `took` is how long the failed attempt ran. A retry is only worth taking if it can run at
    least that long: a deployment that just needed 20 s to time out will not answer in the
    9 s left, and those 9 s serve the customer better on the next deployment.
    `alternatives` says whether another deployment can still be tried after this one.
    """
    if failure.decision is Decision.FATAL:
        return Step(Outcome.FATAL)
    if failure.decision is Decision.FAIL_OVER:
        return Step(Outcome.FAIL_OVER, cooldown=_cooldown_for(failure, policy))
    transient = TABLE[failure.kind].transient
    if failure.kind is ErrorKind.TIMEOUT and alternatives:
        # Slow or silent right now: a second try would most likely cost the customer the
        # same wait again, while the next deployment may answer at once.
        if failure.timer is Timer.FIRST_TOKEN:
            return Step(
                Outcome.FAIL_OVER,
                cooldown=_cooldown_for(failure, policy),
                transient=transient,
                note="too slow to start: not retried in place",
            )
        if failure.silent:
            return Step(
                Outcome.FAIL_OVER,
                cooldown=_cooldown_for(failure, policy),
                transient=transient,
                note="no response at all: not retried in place",
            )
    if retries_done >= policy.retries:
        return Step(
            Outcome.FAIL_OVER,
            cooldown=_cooldown_for(failure, policy),
            transient=transient,
            note=f"{policy.retries} retries spent",
        )
    # A server wait of zero (`Retry-After: 0`, an HTTP-date already past) names no wait at
    # all: the backoff applies, or a crowd of clients would retry into the overload at once.
    if failure.retry_after is not None and failure.retry_after > 0:
        asked = failure.retry_after
        if not budget.fits(asked, now, took):
            # The server told us when it will take us back, and that is past our budget:
            # waiting would only burn the customer's time. Go elsewhere now, and keep away
            # from this deployment for at least as long as it asked.
            return Step(
                Outcome.FAIL_OVER,
                cooldown=min(policy.max_cooldown, max(policy.cooldown, asked)),
                transient=transient,
                note=past_budget("server", asked, budget, now),
            )
        # Jittered, but never past what fits: the server's word decided that it does.
        wait = min(retry_after_wait(asked, rand), max(asked, budget.longest_wait(now, took)))
        return Step(Outcome.RETRY, wait=wait, note=f"retry-after {asked:.1f} s")
    wait = backoff_delay(retries_done + 1, policy, rand)
    if not budget.fits(wait, now, took):
        # Our own backoff, not the server's word: not enough evidence to cool it down.
        return Step(
            Outcome.FAIL_OVER,
            transient=transient,
            note=f"no time left for a {wait:.1f} s backoff and another {took:.1f} s attempt",
        )
    return Step(Outcome.RETRY, wait=wait)


def past_budget(who: str, wait: float, budget: Budget, now: float) -> str:
    """Why a wait someone asked for is not taken: it does not fit what is left."""
    return f"{who} asks for {wait:.1f} s, {budget.left(now):.1f} s of budget left"


def over_limit(wait: float, blocking: str, budget: Budget, now: float) -> Step:
    """The fleet's shared allowance has no place for this call within the budget: fail
    over at once, as for a Retry-After beyond it. The allowance paces every process
    itself, so nothing is cooled; the question as a whole is "try again later"."""
    note = past_budget(f"the limit {blocking}", wait, budget, now)
    return Step(Outcome.FAIL_OVER, transient=True, note=note)


def over_retry_budget(failure: Failure, policy: Policy) -> Step:
    """A retry the fleet's retry budget has no room for: fail over at once instead, so a
    partial outage does not multiply the load on the provider."""
    return Step(
        Outcome.FAIL_OVER,
        cooldown=_cooldown_for(failure, policy),
        transient=TABLE[failure.kind].transient,
        note=f"the fleet's retry budget ({policy.retry_budget:.0%} of recent calls) is spent",
    )


# -- how one attempt ended: values the engine's loop matches on --------------------------------


@record
class Answered:
    """The deployment answered: the question ends with its reply."""

    reply: Reply


@record
class Refused:
    """The question was refused. A refusal is an answer: returned as is, no other deployment.

    `reply` is set when it came as a normal response (the deployment is healthy); otherwise
    it came as a classified failure, `failure`. `by` says whose words `text` is: the
    model's (they are the answer) or the provider's filter (an explanation, never shown
    as the answer).
    """

    text: str
    by: RefusedBy
    reply: Reply | None = None
    failure: Failure | None = None


@record
class Stopped:
    """A stream broke, or ended cut short, after text reached the customer: never retried,
    never spliced.

    `cooldown` is how long to cool the deployment down (None: not at all); `reply` is the
    cut-short reply when the stream did end (its finish reason, its usage).
    """

    failure: Failure
    partial: str
    cooldown: float | None = None
    reply: Reply | None = None


@record
class Fatal:
    """No deployment can fix this request (malformed): the question ends at once."""

    failure: Failure


@record
class Failed:
    """The attempt failed and the question goes on: `step` says retry here or fail over.

    `reply` is a reply that came but is no answer (cut short, empty): a cut-short one is
    the customer's last resort when nothing better comes.
    """

    failure: Failure
    step: Step
    reply: Reply | None = None


Ending = Answered | Refused | Stopped | Fatal | Failed
"""How one attempt ended. All but `Failed` end the question."""


def judge(
    result: Reply | Failure,
    *,
    partial: str = "",
    wrote: bool = False,
    retries_done: int,
    policy: Policy,
    budget: Budget,
    now: float,
    draw: Callable[[], float],
    took: float = 0.0,
    alternatives: bool = False,
    restartable: bool = False,
) -> Ending:
    """What one attempt's reply or failure means for the question.

    `wrote` says whether text already reached the customer; `restartable`, that the
    customer's screen can take that text back (the stream's consumer understands a
    restart), so a break after text is judged as if none had been shown. `draw` is the
    random source, drawn only when a backoff needs jitter. The other arguments are
    `next_step`'s.
    """
    answer = answered(result)
    if answer is not None:
        return answer
    reply = None
    if isinstance(result, Reply):
        if result.refused:
            by = RefusedBy.PROVIDER if result.filtered else RefusedBy.MODEL
            return Refused(result.text, by, reply=result)
        unusable = not_an_answer(result)
        assert unusable is not None  # a reply neither refused nor unusable is answered
        reply, partial = result, result.text
        result = unusable
    if (wrote or (partial and reply is None)) and not restartable:
        # A retry would repeat what the customer already read, a fallback would splice two
        # answers: report the break and keep what was written.
        cooldown = policy.cooldown if TABLE[result.kind].cools else None
        return Stopped(result, partial, cooldown, reply)
    step = next_step(
        result,
        retries_done=retries_done,
        policy=policy,
        budget=budget,
        now=now,
        rand=draw(),
        took=took,
        alternatives=alternatives,
    )
    if step.outcome is Outcome.FATAL:
        if result.kind is ErrorKind.REFUSAL:
            # A refusal as an error status is the provider's filter: the model wrote nothing.
            return Refused(result.detail, RefusedBy.PROVIDER, failure=result)
        return Fatal(result)
    return Failed(result, step, reply)


def answered(result: Reply | Failure) -> Answered | None:
    """The ending of an attempt whose reply is a whole answer (None: `judge` says what it
    means)."""
    return Answered(result) if is_answer(result) else None


def is_answer(result: Reply | Failure) -> TypeGuard[Reply]:
    """Whether `result` is a whole answer. Whatever else the call was, or text shown before
    it, an answer ends the question, so the common attempt needs none of `judge`'s
    arguments (nor its `Answered`: the engine ends the question with the reply itself)."""
    return isinstance(result, Reply) and not result.refused and not_an_answer(result) is None


def not_an_answer(reply: Reply) -> Failure | None:
    """Why a 200's reply is no answer to give the customer (None: it is one).

    An answer cut short by the output limit or the window misleads as if it were whole;
    one with no text (or only whitespace) says nothing. Both are failures, decided from
    the table like any other; the reply's text is kept by the caller.
    """
    if reply.cut_short is None and reply.text.strip():
        return None  # the common reply, told before its failure's wording is built
    why = f"finish_reason {reply.finish_reason}" if reply.finish_reason else "no finish reason"
    if reply.cut_short is ErrorKind.OUTPUT_LIMIT:
        detail = f"the answer was cut short by the output limit ({why})"
    elif reply.cut_short is ErrorKind.CONTEXT_WINDOW:
        detail = f"the answer was cut short: the context window filled ({why})"
    elif not reply.text.strip():
        return _answer_failure(ErrorKind.EMPTY, f"the reply had no text ({why})")
    else:
        return None
    return _answer_failure(reply.cut_short, detail)


def _answer_failure(kind: ErrorKind, detail: str) -> Failure:
    return Failure(kind, TABLE[kind].decision, detail, status=200)


class Plan(NamedTuple):
    """Which deployments to try for a question, in order. (A NamedTuple: read only by the
    engine.)"""

    route: Route
    candidates: tuple[Deployment, ...]


def plan_route(config: Config, input_tokens: int) -> Plan:
    """Order the deployments for an input of `input_tokens` tokens.

    When the first deployment's window cannot hold the input, the long-context deployment
    goes first (the others stay behind it as a last resort); otherwise the normal list is
    tried in order. Deployments whose window is too small stay in the plan so the attempts
    table can show why they were passed over (`window_shortfall`).
    """
    first = config.deployments[0]
    long = config.long_context
    if window_shortfall(config, input_tokens, first) and long is not None:
        return Plan(Route.LONG_CONTEXT, (long, *config.deployments))
    return Plan(Route.NORMAL, config.deployments)


def window_shortfall(config: Config, input_tokens: int, d: Deployment) -> str | None:
    """Why `d`'s window cannot hold the input plus the reply; None when it can."""
    needed = input_tokens + config.max_output_tokens
    if needed <= d.context_window:
        return None
    return (
        f"input needs {needed:,} tokens (incl. {config.max_output_tokens:,} for the reply); "
        f"window is {d.context_window:,}"
    )


def after_overflow(
    config: Config, rejected_by: Deployment, queue: list[Deployment], tried: Collection[str]
) -> tuple[list[Deployment], list[tuple[Deployment, str]]]:
    """What is still worth trying after `rejected_by` reported a context overflow.

    Returns the new queue and the deployments dropped from it, each with the reason (so the
    attempts table and the failure report name every deployment, tried or not).

    A larger window may hold the input. So may a window just as large behind a different
    provider or model: windows are counted in each model's own tokens, and another
    tokenizer can need fewer for the same text. The same model with a window no larger
    would overflow the same way, and a smaller window is taken at its configured word.
    The long-context deployment joins at the end when it has not been tried and is not
    queued already.
    """
    extra = config.long_context
    if extra is not None and extra not in queue and extra.name not in tried:
        queue = [*queue, extra]
    window = rejected_by.context_window
    same_model = (rejected_by.provider, rejected_by.model)
    kept: list[Deployment] = []
    dropped: list[tuple[Deployment, str]] = []
    for d in queue:
        if d.context_window > window or (
            d.context_window == window and (d.provider, d.model) != same_model
        ):
            kept.append(d)
        elif d.context_window < window:
            dropped.append(
                (
                    d,
                    f"window {d.context_window:,} is smaller than {rejected_by.name}'s "
                    f"{window:,}, which the input overflowed",
                )
            )
        else:
            dropped.append(
                (d, f"same model and window as {rejected_by.name}, which the input overflowed")
            )
    return kept, dropped
