"""The engine's pure decisions, one rule at a time: no clock, no I/O."""

from __future__ import annotations

import pytest

from gateway.config import Config, Deployment, Policy
from gateway.engine.backoff import Budget, backoff_delay
from gateway.engine.fitting import Windows
from gateway.engine.policy import (
    Answered,
    Failed,
    Fatal,
    Refused,
    Stopped,
    after_overflow,
    judge,
    next_step,
    plan_route,
    window_shortfall,
)
from gateway.model import (
    Decision,
    ErrorKind,
    Failure,
    Outcome,
    ProviderKind,
    RefusedBy,
    Reply,
    Route,
)

POLICY = Policy(retries=2, backoff_base=1.0, backoff_max=8.0, cooldown=60.0)


def fail(kind: ErrorKind, decision: Decision, retry_after: float | None = None) -> Failure:
    return Failure(kind, decision, f"{kind}", 429, retry_after)


@pytest.mark.parametrize(
    ("retry", "rand", "expected"),
    [(1, 0.0, 0.5), (1, 0.5, 0.75), (2, 0.0, 1.0), (3, 0.5, 3.0), (4, 0.0, 4.0), (9, 0.0, 4.0)],
)
def test_backoff_is_equal_jitter_under_a_doubling_capped_ceiling(retry, rand, expected):
    assert backoff_delay(retry, POLICY, rand) == pytest.approx(expected)


@pytest.mark.parametrize("retry", [1025, 10**6, 10**18])
def test_backoff_for_a_huge_retry_number_is_the_cap_not_an_overflow(retry):
    assert backoff_delay(retry, POLICY, 0.0) == 4.0
    tiny = Policy(retries=2, backoff_base=1e-6, backoff_max=1e6)
    assert backoff_delay(retry, tiny, 0.0) == 5e5


@pytest.mark.parametrize(
    ("failure", "retries_done", "left", "took", "outcome", "wait", "cooldown"),
    [
        # retryable, budget to spare: back off
        (fail(ErrorKind.SERVER, Decision.RETRY), 0, 30, 0.1, Outcome.RETRY, 0.75, None),
        # retries spent: fail over and cool for the policy's cooldown
        (fail(ErrorKind.SERVER, Decision.RETRY), 2, 30, 0.1, Outcome.FAIL_OVER, 0, 60.0),
        # the server's wait is honoured above backoff_max when it fits, lengthened by its
        # jitter (a tenth of it, at most 1 s, times the draw of 0.5)
        (fail(ErrorKind.RATE_LIMIT, Decision.RETRY, 12), 0, 30, 0.1, Outcome.RETRY, 12.5, None),
        (fail(ErrorKind.RATE_LIMIT, Decision.RETRY, 2), 0, 30, 0.1, Outcome.RETRY, 2.1, None),
        # ... but never past what the budget leaves for the call: the server's word decided
        (fail(ErrorKind.RATE_LIMIT, Decision.RETRY, 29.4), 0, 30, 0.1, Outcome.RETRY, 29.5, None),
        # a server wait of zero is no wait named: the normal backoff, never at once
        (fail(ErrorKind.RATE_LIMIT, Decision.RETRY, 0.0), 0, 30, 0.1, Outcome.RETRY, 0.75, None),
        # ... and when it does not fit, fail over now, cooled at least that long
        (fail(ErrorKind.RATE_LIMIT, Decision.RETRY, 90), 0, 30, 0.1, Outcome.FAIL_OVER, 0, 90),
        # no retry into less time than the failed attempt needed
        (fail(ErrorKind.TIMEOUT, Decision.RETRY), 0, 10, 20.0, Outcome.FAIL_OVER, 0, None),
        # fail-over kinds: at once, cooled
        (fail(ErrorKind.AUTH, Decision.FAIL_OVER), 0, 30, 0.1, Outcome.FAIL_OVER, 0, 60.0),
        # context window: fail over, never cooled (the input is at fault)
        (
            fail(ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER),
            0,
            30,
            0.1,
            Outcome.FAIL_OVER,
            0,
            None,
        ),
        # fatal: stop, never cooled
        (fail(ErrorKind.BAD_REQUEST, Decision.FATAL), 0, 30, 0.1, Outcome.FATAL, 0, None),
        (fail(ErrorKind.REFUSAL, Decision.FATAL), 0, 30, 0.1, Outcome.FATAL, 0, None),
    ],
)
def test_next_step(failure, retries_done, left, took, outcome, wait, cooldown):
    step = next_step(
        failure,
        retries_done=retries_done,
        policy=POLICY,
        budget=Budget(0.0, left),
        now=0.0,
        rand=0.5,
        took=took,
    )
    assert (step.outcome, step.wait, step.cooldown) == (outcome, pytest.approx(wait), cooldown)


def _judge(result: Reply | Failure, *, partial: str = "", wrote: bool = False) -> object:
    draws: list[float] = []

    def draw() -> float:
        draws.append(0.5)
        return 0.5

    ending = judge(
        result,
        partial=partial,
        wrote=wrote,
        retries_done=0,
        policy=POLICY,
        budget=Budget(0.0, 30.0),
        now=0.0,
        draw=draw,
        took=0.1,
    )
    return ending, len(draws)


def test_every_way_an_attempt_ends_is_a_value_and_only_a_backoff_draws_jitter():
    ok = Reply("fine", "stop")
    refused = Reply("I can't help with that.", "stop", refused=True)
    server = fail(ErrorKind.SERVER, Decision.RETRY)
    blocked = fail(ErrorKind.REFUSAL, Decision.FATAL)
    malformed = fail(ErrorKind.BAD_REQUEST, Decision.FATAL)
    assert _judge(ok) == (Answered(ok), 0)
    assert _judge(refused) == (Refused(refused.text, RefusedBy.MODEL, reply=refused), 0)
    filtered = Reply("Withheld.", "content_filter", refused=True, filtered=True)
    assert _judge(filtered) == (Refused("Withheld.", RefusedBy.PROVIDER, reply=filtered), 0)
    assert _judge(blocked) == (Refused("refusal", RefusedBy.PROVIDER, failure=blocked), 1)
    assert _judge(malformed) == (Fatal(malformed), 1)
    ending, draws = _judge(server)
    assert isinstance(ending, Failed)
    assert (ending.step.outcome, ending.step.wait, draws) == (Outcome.RETRY, 0.75, 1)
    # once text reached the customer, nothing is retried: the stream stopped, cooled
    assert _judge(server, partial="Half an", wrote=True) == (Stopped(server, "Half an", 60.0), 0)
    context = fail(ErrorKind.CONTEXT_WINDOW, Decision.FAIL_OVER)
    assert _judge(context, wrote=True) == (Stopped(context, "", None), 0)


@pytest.mark.parametrize(
    ("reply", "kind", "says"),
    [
        (Reply("Half an", "length", cut_short=ErrorKind.OUTPUT_LIMIT), ErrorKind.OUTPUT_LIMIT,
         "cut short by the output limit (finish_reason length)"),
        (Reply("Half", "model_context_window_exceeded", cut_short=ErrorKind.CONTEXT_WINDOW),
         ErrorKind.CONTEXT_WINDOW, "the context window filled"),
        (Reply("", "STOP"), ErrorKind.EMPTY, "no text (finish_reason STOP)"),
        (Reply(" \n\t", None), ErrorKind.EMPTY, "no text (no finish reason)"),
    ],
)  # fmt: skip
def test_a_reply_that_is_no_answer_is_a_failure_that_keeps_the_reply(
    reply: Reply, kind: ErrorKind, says: str
) -> None:
    ending, _ = _judge(reply)
    assert isinstance(ending, Failed)
    assert (ending.failure.kind, ending.failure.status, ending.reply) == (kind, 200, reply)
    assert says in ending.failure.detail
    # streamed: the text already reached the customer, so the attempt stops
    streamed, _ = _judge(reply, wrote=True)
    cooldown = 60.0 if kind is ErrorKind.EMPTY else None  # a healthy deployment stays warm
    assert streamed == Stopped(ending.failure, reply.text, cooldown, reply)


SMALL = Deployment("small", ProviderKind.OPENAI, 8_000, model="m")
MID = Deployment("mid", ProviderKind.ANTHROPIC, 16_000, model="m")
LONG = Deployment("long", ProviderKind.GEMINI, 1_000_000, model="m")
CONFIG = Config("Acme", (SMALL, MID), LONG, max_output_tokens=400)


def test_an_input_that_fits_the_first_window_takes_the_normal_route():
    plan = plan_route(CONFIG, 7_000)
    assert (plan.route, plan.candidates) == (Route.NORMAL, (SMALL, MID))


def test_the_plan_worked_out_once_is_every_input_s_that_fits_the_smallest_window():
    windows = Windows.of(CONFIG)
    assert windows.smallest == 8_000
    for tokens in (0, 1, 7_000, 7_600):  # 7,600 + 400 fills the smallest window
        assert windows.plan == plan_route(CONFIG, tokens)
    assert windows.plan != plan_route(CONFIG, 7_601)


def test_an_input_too_large_for_the_first_window_goes_to_long_context_first():
    plan = plan_route(CONFIG, 7_700)  # 7,700 + 400 > 8,000
    assert (plan.route, plan.candidates) == (Route.LONG_CONTEXT, (LONG, SMALL, MID))
    assert window_shortfall(CONFIG, 7_700, SMALL) == (
        "input needs 8,100 tokens (incl. 400 for the reply); window is 8,000"
    )
    assert window_shortfall(CONFIG, 7_700, MID) is None


def test_after_an_overflow_larger_windows_remain_and_long_context_joins():
    kept, dropped = after_overflow(CONFIG, MID, [SMALL], tried={"mid"})
    assert kept == [LONG]
    assert dropped == [
        (SMALL, "window 8,000 is smaller than mid's 16,000, which the input overflowed")
    ]
    assert after_overflow(CONFIG, SMALL, [MID], tried={"small"}) == ([MID, LONG], [])
    kept, dropped = after_overflow(CONFIG, LONG, [SMALL, MID], tried={"long"})
    assert (kept, [d for d, _ in dropped]) == ([], [SMALL, MID])


def test_after_an_overflow_an_equal_window_of_another_model_is_still_tried():
    # Windows are counted in each model's own tokens: another tokenizer may fit the input.
    other_provider = Deployment("other", ProviderKind.GEMINI, 8_000, model="m")
    other_model = Deployment("bigger-model", ProviderKind.OPENAI, 8_000, model="m2")
    twin = Deployment("twin", ProviderKind.OPENAI, 8_000, model="m")
    queue = [other_provider, other_model, twin]
    kept, dropped = after_overflow(CONFIG, SMALL, queue, tried={"small"})
    assert kept == [other_provider, other_model, LONG]
    assert dropped == [(twin, "same model and window as small, which the input overflowed")]


@pytest.mark.parametrize(
    "retry_after",
    ["0", "0.0", "Fri, 29 Sep 2023 16:00:00 GMT"],
    ids=["zero", "zero-point-zero", "a-date-in-the-past"],
)
def test_retry_after_zero_or_past_gets_the_normal_backoff(retry_after):
    from gateway.classify.errors import classify_response

    body = b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}'
    failure = classify_response(429, {"retry-after": retry_after}, body, now=1_700_000_000.0)
    assert failure.kind is ErrorKind.RATE_LIMIT
    step = next_step(
        failure,
        retries_done=0,
        policy=POLICY,
        budget=Budget(0.0, 30.0),
        now=0.0,
        rand=0.5,
        took=0.1,
    )
    assert (step.outcome, step.wait) == (Outcome.RETRY, backoff_delay(1, POLICY, 0.5))
    assert step.wait > 0
