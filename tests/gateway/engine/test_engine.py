"""The fallback engine, driven by scripted fakes on virtual time: no test sleeps."""

from __future__ import annotations

import logging

import pytest

from gateway.clock import FixedRandom, VirtualClock
from gateway.config import Config, Deployment, Policy, Price
from gateway.engine.loop import Engine
from gateway.model import (
    Attempt,
    ErrorKind,
    FailureKind,
    Outcome,
    ProviderKind,
    Refusal,
    RefusedBy,
    Reply,
    Request,
    Route,
    Status,
    Timer,
    Usage,
)
from gateway.record import replace
from gateway.state.memory import MemoryStore
from tests.support.fakes import ScriptedFactory, ScriptedProvider, Stream, answer, failure

KEYS = {"OPENAI_API_KEY": "sk-test-primary", "ANTHROPIC_API_KEY": "sk-ant-test"}


DEFAULT_POLICY = Policy()


def deployments(policy: Policy = DEFAULT_POLICY) -> tuple[Deployment, ...]:
    return (
        Deployment(
            "primary", ProviderKind.OPENAI, 128_000, policy, "gpt-4o-mini", "OPENAI_API_KEY"
        ),
        Deployment(
            "fallback",
            ProviderKind.ANTHROPIC,
            200_000,
            policy,
            "claude-haiku-4-5",
            "ANTHROPIC_API_KEY",
        ),
    )


LONG = Deployment("long", ProviderKind.GEMINI, 1_000_000, Policy(), "gemini-2.5-pro", None)


class Harness:
    """One engine with scripted providers, a virtual clock and a shared memory store."""

    def __init__(
        self,
        scripts: dict[str, list[object]],
        *,
        config: Config | None = None,
        environ: dict[str, str] | None = None,
        store: MemoryStore | None = None,
        takes: float = 0.0,
        rand: float = 0.5,
    ) -> None:
        self.clock = VirtualClock()
        self.config = config or Config(product="Acme", deployments=deployments(), long_context=LONG)
        self.providers = {
            name: ScriptedProvider(name, list(script), self.clock, takes)  # type: ignore[arg-type]
            for name, script in scripts.items()
        }
        self.factory = ScriptedFactory(list(self.providers.values()))
        self.store = store if store is not None else MemoryStore()
        self.seen: list[Attempt] = []
        self.counted: list[str] = []
        self.environ = dict(KEYS if environ is None else environ)

        def count(text: str) -> int:
            self.counted.append(text)
            return len(text) // 4

        self.engine = Engine(
            self.config,
            providers=self.factory,
            store=self.store,
            clock=self.clock,
            sleeper=self.clock,
            rng=FixedRandom(rand),
            environ=self.environ,
            count_tokens=count,
            on_attempt=self.seen.append,
        )

    def ask(self, question: str = "How do I reset my password?", **kw: object):  # type: ignore[no-untyped-def]
        return self.engine.ask(Request("You answer support questions.", question, 400), **kw)  # type: ignore[arg-type]

    def calls(self, name: str) -> int:
        return self.providers[name].calls


def decisions(result) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(a.deployment, str(a.outcome)) for a in result.attempts]


# -- the acceptance test the user asked for, word for word -----------------------------------


def shared_key_config() -> Config:
    """The most common fallback: a cheaper model of the same provider, on the same key."""
    primary, _ = deployments()
    fallback = replace(primary, name="fallback", model="gpt-4o-mini")
    return Config(product="Acme", deployments=(primary, fallback), long_context=LONG)


@pytest.mark.parametrize("shared_key", [False, True], ids=["two_keys", "one_shared_key"])
def test_primary_429_three_times_fails_over_and_the_next_request_goes_straight_to_fallback(
    shared_key: bool,
):
    store = MemoryStore()
    h = Harness(
        {
            "primary": [failure(ErrorKind.RATE_LIMIT)] * 3 + [answer("primary text")],
            "fallback": [answer("fallback text")],
        },
        store=store,
        config=shared_key_config() if shared_key else None,
    )
    result = h.ask()
    assert h.calls("primary") == 3
    assert h.calls("fallback") == 1
    assert result.answer == "fallback text"
    assert result.deployment == "fallback"
    assert result.status is Status.ANSWERED

    second = h.ask()
    assert h.calls("primary") == 3, "the cooled-down primary must not be called again"
    assert h.calls("fallback") == 2
    assert second.answer == "fallback text"
    assert decisions(second)[0] == ("primary", "skipped")
    assert "cooling down" in second.attempts[0].detail


# -- retries, backoff and Retry-After ----------------------------------------------------------


def test_backoff_waits_follow_the_documented_formula_and_are_recorded():
    h = Harness({"primary": [failure(ErrorKind.OVERLOADED)] * 2 + [answer("ok")], "fallback": []})
    result = h.ask()
    # equal jitter with rand=0.5: ceiling 1 s then 2 s, waits 0.75 s and 1.5 s
    assert h.clock.slept == [0.75, 1.5]
    assert [a.wait_s for a in result.attempts] == [0.75, 1.5, 0.0]
    assert decisions(result) == [
        ("primary", "retry"),
        ("primary", "retry"),
        ("primary", "answered"),
    ]
    assert result.served_attempts == 3


def test_backoff_is_capped_at_backoff_max():
    policy = Policy(retries=5, backoff_base=4.0, backoff_max=5.0, budget=100.0)
    config = Config("Acme", deployments(policy), LONG, policy=policy)
    h = Harness(
        {"primary": [failure(ErrorKind.SERVER)] * 5 + [answer("ok")], "fallback": []},
        config=config,
        rand=0.999,
    )
    h.ask()
    assert max(h.clock.slept) < 5.0
    assert len(h.clock.slept) == 5


def test_retry_after_is_honoured_even_above_backoff_max_when_it_fits_the_budget():
    h = Harness(
        {"primary": [failure(ErrorKind.RATE_LIMIT, retry_after=12.0), answer("ok")], "fallback": []}
    )
    result = h.ask()
    assert h.clock.slept == [12.0 + 1.0 * 0.5]  # with its jitter: at most 1 s, times the draw
    assert result.deployment == "primary"


def test_retry_after_past_the_budget_fails_over_at_once_and_cools_down_for_at_least_that_long():
    h = Harness(
        {
            "primary": [failure(ErrorKind.RATE_LIMIT, retry_after=600.0)],
            "fallback": [answer("from fallback")],
        }
    )
    result = h.ask()
    assert h.calls("primary") == 1
    assert h.clock.slept == []
    assert result.answer == "from fallback"
    (entry,) = [c for c in h.store.entries() if c.deployment == "primary"]
    assert entry.until - h.clock.wall() >= 600.0
    assert "server asks for 600.0 s" in result.attempts[0].detail


def test_retries_spent_cools_the_deployment_for_the_policy_cooldown():
    h = Harness({"primary": [failure(ErrorKind.SERVER)], "fallback": [answer("ok")]})
    h.ask()
    (entry,) = h.store.entries()
    assert entry.deployment == "primary"
    assert entry.kind is ErrorKind.SERVER
    assert entry.until - h.clock.wall() == pytest.approx(60.0)


def test_unknown_errors_are_retried_and_get_only_a_timed_cooldown():
    h = Harness({"primary": [failure(ErrorKind.UNKNOWN)], "fallback": [answer("ok")]})
    h.ask()
    assert h.calls("primary") == 3
    (entry,) = h.store.entries()
    assert entry.until - h.clock.wall() == pytest.approx(60.0)
    h.clock.advance(61)
    h.providers["primary"].script[:] = [answer("healthy again")]
    assert h.ask().deployment == "primary", "an expired cooldown must clear"


# -- the time budget ---------------------------------------------------------------------------


def test_the_whole_question_never_outlasts_the_budget_whatever_the_providers_do():
    # Every call hangs until its timeout: the engine must cap each by what is left.
    h = Harness({"primary": [answer("never")], "fallback": [answer("never")]}, takes=1_000.0)
    result = h.ask()
    assert h.clock.monotonic() <= 30.0 + 1e-9
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.kind is FailureKind.UNAVAILABLE
    assert h.providers["primary"].timeouts == [20.0]
    assert h.providers["fallback"].timeouts == [10.0]


def test_retry_later_says_cooling_down_only_for_what_is_cooling():
    h = Harness(
        {"primary": [failure(ErrorKind.OVERLOADED)] * 3, "fallback": [answer("never")]},
        takes=0.0,
    )
    h.providers["fallback"].takes = 1_000.0  # hangs until the budget is spent
    first = h.ask()
    assert first.error is not None and first.error.kind is FailureKind.UNAVAILABLE
    message = first.error.message
    assert "cooling down" not in message  # nothing was, when this question began
    assert "primary failed (overloaded)" in message and "fallback failed (timeout)" in message

    second = h.ask()
    assert second.error is not None and second.error.kind is FailureKind.UNAVAILABLE
    assert second.error.message == (
        "no deployment can answer for now: primary is cooling down; "
        "fallback failed (timeout); retry later"
    )


def test_the_budget_counts_from_when_the_question_started_not_from_the_engine_call():
    # The caller spent 25 s of the 30 before asking (start-up, reading the articles): the
    # primary gets the 5 s left, not a fresh 20 s timeout, and the whole run ends at 30 s.
    h = Harness({"primary": [answer("never")], "fallback": [answer("never")]}, takes=1_000.0)
    h.clock.advance(25.0)
    result = h.ask(started=0.0)
    assert h.providers["primary"].timeouts == [5.0]
    assert h.clock.monotonic() <= 30.0 + 1e-9
    assert result.elapsed_s == pytest.approx(30.0)  # what the caller saw, start-up included


def test_a_hanging_deployment_is_not_retried_into_less_time_than_it_just_needed():
    # The primary took its whole 20 s timeout: a 9 s retry would hang too, so the 10 s left
    # go to the fallback, which answers.
    h = Harness({"primary": [answer("never")], "fallback": [answer("fallback text")]})
    h.providers["primary"].takes = 1_000.0
    result = h.ask()
    assert result.answer == "fallback text"
    assert h.calls("primary") == 1
    assert "another 20.0 s attempt" in result.attempts[0].detail


def test_attempt_timeout_is_capped_by_the_remaining_budget():
    h = Harness(
        {"primary": [failure(ErrorKind.TIMEOUT), answer("late but fine")], "fallback": []},
        takes=12.0,
    )
    h.ask()
    t1, t2 = h.providers["primary"].timeouts
    assert t1 == 20.0
    assert t2 == pytest.approx(30.0 - 12.0 - 0.75)


def test_the_offline_deployment_still_answers_when_the_budget_is_spent():
    local = Deployment("local", ProviderKind.LOCAL, 1_000_000, Policy())
    config = Config("Acme", (*deployments(), local), LONG)
    h = Harness(
        {"primary": [answer("never")], "fallback": [answer("never")], "local": [answer("offline")]},
        config=config,
        takes=1_000.0,
    )
    h.providers["local"].takes = 0.0
    result = h.ask()
    assert result.answer == "offline"
    assert result.deployment == "local"


# -- first-token and stall deadlines -----------------------------------------------------------


def test_every_deployment_but_the_last_that_can_be_tried_gets_the_first_token_deadline():
    # fallback cannot be tried (its key is not set): primary is the last one, so it gets
    # the whole attempt however slowly it starts.
    h = Harness({"primary": [answer("ok")], "fallback": []}, environ={"OPENAI_API_KEY": "k"})
    h.ask()
    assert h.providers["primary"].first_tokens == [None]
    h = Harness({"primary": [failure(ErrorKind.SERVER), answer("ok")], "fallback": []})
    h.ask()
    assert h.providers["primary"].first_tokens == [10.0, 10.0]
    assert h.providers["primary"].stalls == [5.0, 5.0]


def test_a_slow_first_token_fails_over_at_once_and_cools_the_slow_deployment():
    slow = replace(failure(ErrorKind.TIMEOUT, detail="no text in 10 s"), timer=Timer.FIRST_TOKEN)
    h = Harness({"primary": [slow, answer("not asked again")], "fallback": [answer("quick")]})
    result = h.ask()
    assert result.answer == "quick"
    assert h.calls("primary") == 1, "a slow start is not retried in place"
    assert decisions(result) == [("primary", "fail_over"), ("fallback", "answered")]
    assert "not retried in place" in result.attempts[0].detail
    assert [c.deployment for c in h.store.entries()] == ["primary"]
    assert h.providers["fallback"].first_tokens == [None], "the last one is never cut off"


@pytest.mark.parametrize("last", [False, True], ids=["another-left", "last-left"])
def test_a_silent_timeout_fails_over_unless_nothing_else_can_be_tried(last: bool):
    silent = replace(failure(ErrorKind.TIMEOUT), silent=True)
    environ = {"OPENAI_API_KEY": "k"} if last else None
    h = Harness(
        {"primary": [silent, answer("second try")], "fallback": [answer("fallback")]},
        environ=environ,
    )
    result = h.ask()
    if last:
        assert (h.calls("primary"), result.answer) == (2, "second try")
    else:
        assert (h.calls("primary"), result.answer) == (1, "fallback")
        assert "no response at all" in result.attempts[0].detail


def test_a_timeout_after_a_response_began_is_still_retried_in_place():
    h = Harness({"primary": [failure(ErrorKind.TIMEOUT), answer("ok")], "fallback": []})
    assert h.ask().answer == "ok"
    assert h.calls("primary") == 2


def test_a_stall_after_text_stops_the_question_at_once_with_the_text_kept():
    stalled = replace(failure(ErrorKind.TIMEOUT), timer=Timer.STALL)
    written: list[str] = []
    h = Harness({"primary": [Stream(("Open ", "Settings"), then=stalled)], "fallback": []})
    result = h.ask(on_text=written.append)
    assert result.status is Status.FAILED and result.incomplete
    assert result.answer == "Open Settings" == "".join(written)
    assert decisions(result) == [("primary", "stopped")]
    assert h.calls("fallback") == 0


# -- fail over, fatal, refusal -----------------------------------------------------------------


@pytest.mark.parametrize("kind", [ErrorKind.AUTH, ErrorKind.QUOTA, ErrorKind.MODEL_NOT_FOUND])
def test_fail_over_kinds_are_not_retried_and_cool_the_deployment(kind: ErrorKind):
    h = Harness({"primary": [failure(kind)], "fallback": [answer("ok")]})
    result = h.ask()
    assert h.calls("primary") == 1
    assert decisions(result) == [("primary", "fail_over"), ("fallback", "answered")]
    assert [c.deployment for c in h.store.entries()] == ["primary"]


def test_bad_request_is_fatal_no_failover_no_cooldown():
    h = Harness({"primary": [failure(ErrorKind.BAD_REQUEST)], "fallback": [answer("ok")]})
    result = h.ask()
    assert result.status is Status.FATAL
    assert result.error is not None and result.error.kind is FailureKind.BAD_REQUEST
    assert h.calls("fallback") == 0
    assert h.store.entries() == []


def test_a_refusal_reply_is_returned_as_the_answer_and_never_shopped_around():
    refusal = replace(answer("I can't help with that."), refused=True)
    h = Harness({"primary": [refusal], "fallback": [answer("ok")]})
    result = h.ask()
    assert result.status is Status.REFUSED
    assert result.answer == "I can't help with that."
    assert h.calls("fallback") == 0
    assert h.store.entries() == []
    assert result.attempts[-1].error_class is ErrorKind.REFUSAL


def test_a_prompt_the_provider_blocked_is_refused_by_the_provider_with_no_answer():
    # The provider's error text is not something the model said: never the answer.
    h = Harness(
        {
            "primary": [failure(ErrorKind.REFUSAL, detail="400 invalid_prompt: flagged")],
            "fallback": [answer("ok")],
        }
    )
    result = h.ask()
    assert result.status is Status.REFUSED
    assert result.answer is None
    assert result.refusal == Refusal(RefusedBy.PROVIDER, "400 invalid_prompt: flagged")
    assert result.as_json()["refusal"] == {
        "by": "provider",
        "message": "400 invalid_prompt: flagged",
    }
    assert h.calls("fallback") == 0


def test_an_answer_the_providers_filter_withheld_is_refused_by_the_provider():
    withheld = Reply("Withheld (SAFETY).", "SAFETY", refused=True, filtered=True)
    h = Harness({"primary": [withheld], "fallback": [answer("ok")]})
    result = h.ask()
    assert (result.status, result.answer, result.finish_reason) == (Status.REFUSED, None, "SAFETY")
    assert result.refusal is not None and result.refusal.by is RefusedBy.PROVIDER


def test_the_models_own_refusal_is_the_answer_and_says_so():
    refusal = replace(answer("I can't help with that."), refused=True)
    result = Harness({"primary": [refusal], "fallback": []}).ask()
    assert result.answer == "I can't help with that."
    assert result.refusal == Refusal(RefusedBy.MODEL, "I can't help with that.")


# -- answers that are not answers: cut short, empty ----------------------------------------


def cut(text: str, reason: str = "length", kind: ErrorKind = ErrorKind.OUTPUT_LIMIT) -> Reply:
    return Reply(text, reason, model="fake-model", cut_short=kind)


def test_an_answer_cut_short_by_the_output_limit_fails_over_without_cooling():
    h = Harness({"primary": [cut("To reset your pass")], "fallback": [answer("Whole answer.")]})
    result = h.ask()
    assert (result.status, result.answer, result.deployment) == (
        Status.ANSWERED,
        "Whole answer.",
        "fallback",
    )
    assert result.finish_reason == "stop"
    first = result.attempts[0]
    assert (first.status, first.error_class, first.outcome) == (
        200,
        ErrorKind.OUTPUT_LIMIT,
        Outcome.FAIL_OVER,
    )
    assert "cut short by the output limit (finish_reason length)" in first.detail
    assert h.calls("primary") == 1
    assert h.store.entries() == [], "the cut-short deployment is healthy"


def test_when_nothing_better_comes_the_cut_short_answer_is_returned_incomplete():
    h = Harness(
        {
            "primary": [cut("To reset your pass", "max_tokens")],
            "fallback": [failure(ErrorKind.AUTH)],
        }
    )
    result = h.ask()
    assert result.status is Status.FAILED and result.incomplete
    assert (result.answer, result.deployment, result.finish_reason) == (
        "To reset your pass",
        "primary",
        "max_tokens",
    )
    assert result.error is not None and result.error.kind is FailureKind.INCOMPLETE
    assert "cut short" in result.error.message
    assert [d.name for d in result.error.deployments] == ["primary", "fallback"]


def test_an_answer_cut_short_by_the_window_moves_to_a_larger_window():
    h = Harness(
        {
            "primary": [cut("Half", "model_context_window_exceeded", ErrorKind.CONTEXT_WINDOW)],
            "fallback": [answer("Whole answer.")],
        }
    )
    result = h.ask()
    assert result.answer == "Whole answer."
    assert result.attempts[0].error_class is ErrorKind.CONTEXT_WINDOW
    assert h.store.entries() == []


def test_a_streamed_answer_cut_short_after_text_is_stopped_and_incomplete():
    written: list[str] = []

    class CutStream(ScriptedProvider):
        def complete(self, request, *, timeout, on_text=None, **_):  # type: ignore[no-untyped-def]
            self.requests.append(request)
            assert on_text is not None
            on_text("To reset ")
            return cut("To reset ")

    config = Config("Acme", deployments(), long_context=None)
    h = Harness({"primary": [], "fallback": [answer("never")]}, config=config)
    h.factory.by_name["primary"] = CutStream("primary", [])
    result = h.ask(on_text=written.append)
    assert result.status is Status.FAILED and result.incomplete
    assert (result.answer, result.finish_reason) == ("To reset ", "length")
    assert decisions(result) == [("primary", "stopped")]
    assert h.calls("fallback") == 0


@pytest.mark.parametrize("text", ["", "  \n "], ids=["nothing", "whitespace"])
def test_an_empty_answer_is_a_failure_retried_then_failed_over(text: str):
    empty = Reply(text, "STOP", model="fake-model")
    h = Harness({"primary": [empty], "fallback": [answer("Something to say.")]})
    result = h.ask()
    assert result.answer == "Something to say."
    assert [a.error_class for a in result.attempts[:3]] == [ErrorKind.EMPTY] * 3
    assert decisions(result)[:3] == [("primary", "retry")] * 2 + [("primary", "fail_over")]
    assert "the reply had no text (finish_reason STOP)" in result.attempts[0].detail


def test_an_empty_answer_from_the_only_deployment_is_never_exit_zero():
    empty = Reply("", "stop")
    result = Harness({"primary": [empty], "fallback": []}, environ={"OPENAI_API_KEY": "k"}).ask()
    assert result.status is Status.FAILED
    assert result.answer is None


def test_context_overflow_fails_over_to_a_larger_window_without_cooling_down():
    small = Deployment("small", ProviderKind.OPENAI, 8_000, Policy(), "m", "OPENAI_API_KEY")
    smaller = Deployment("smaller", ProviderKind.OPENAI, 4_000, Policy(), "m", "OPENAI_API_KEY")
    config = Config("Acme", (small, smaller), LONG)
    h = Harness(
        {
            "small": [failure(ErrorKind.CONTEXT_WINDOW)],
            "smaller": [answer("no")],
            "long": [answer("long answer")],
        },
        config=config,
        environ={**KEYS, "GEMINI_API_KEY": "g"},
    )
    result = h.ask()
    assert result.answer == "long answer"
    assert h.calls("smaller") == 0, "a smaller window cannot hold what a larger one refused"
    assert h.store.entries() == []


def test_context_overflow_tries_an_equal_window_behind_another_provider():
    # primary and fallback both say 128,000: Claude counts the same text in its own tokens.
    same = Deployment(
        "fallback", ProviderKind.ANTHROPIC, 128_000, Policy(), "c", "ANTHROPIC_API_KEY"
    )
    config = Config("Acme", (deployments()[0], same), long_context=None)
    h = Harness(
        {"primary": [failure(ErrorKind.CONTEXT_WINDOW)], "fallback": [answer("fits here")]},
        config=config,
    )
    result = h.ask()
    assert result.status is Status.ANSWERED
    assert result.answer == "fits here"
    assert h.store.entries() == []


def test_after_an_overflow_every_deployment_left_out_is_named_and_the_message_is_true():
    primary = deployments()[0]
    twin = Deployment(
        "twin", ProviderKind.OPENAI, 128_000, Policy(), "gpt-4o-mini", "OPENAI_API_KEY"
    )
    small = Deployment("small", ProviderKind.OPENAI, 8_000, Policy(), "m", "OPENAI_API_KEY")
    config = Config("Acme", (primary, twin, small), long_context=None)
    h = Harness(
        {
            "primary": [failure(ErrorKind.CONTEXT_WINDOW)],
            "twin": [answer("no")],
            "small": [answer("no")],
        },
        config=config,
    )
    result = h.ask()
    assert (h.calls("twin"), h.calls("small")) == (0, 0)
    assert decisions(result) == [
        ("primary", "fail_over"),
        ("twin", "skipped"),
        ("small", "skipped"),
    ]
    assert "same model and window as primary" in result.attempts[1].detail
    assert "smaller than primary's 128,000" in result.attempts[2].detail
    assert result.error is not None and result.error.kind is FailureKind.TOO_LARGE
    assert [d.name for d in result.error.deployments] == ["primary", "twin", "small"]
    assert "each overflowed or has a smaller window" in result.error.message


# -- routing by size ---------------------------------------------------------------------------


def test_oversized_input_goes_straight_to_the_long_context_deployment():
    h = Harness({"primary": [answer("no")], "fallback": [answer("no")], "long": [answer("big")]})
    result = h.ask("x" * 4 * 150_000)  # ~150k tokens by the fake counter
    assert result.routed is Route.LONG_CONTEXT
    assert result.answer == "big"
    assert h.calls("primary") == 0
    assert result.input_tokens_exact


def test_deployments_whose_window_is_too_small_are_skipped_with_the_reason():
    config = Config("Acme", deployments(), long_context=None)
    h = Harness({"primary": [answer("no")], "fallback": [answer("fits")]}, config=config)
    result = h.ask("y" * 4 * 150_000)
    assert result.routed is Route.NORMAL
    assert result.answer == "fits"
    assert result.attempts[0].outcome is Outcome.SKIPPED
    assert "window is 128,000" in result.attempts[0].detail


def test_input_too_large_for_every_window_is_fatal():
    h = Harness({"primary": [answer("no")], "fallback": [answer("no")], "long": [answer("no")]})
    result = h.ask("z" * 4 * 2_000_000)
    assert result.status is Status.FATAL
    assert result.error is not None and result.error.kind is FailureKind.TOO_LARGE
    assert sum(p.calls for p in h.providers.values()) == 0


def test_small_inputs_do_not_load_the_tokenizer_unless_asked():
    h = Harness({"primary": [answer("ok")], "fallback": []})
    result = h.ask()
    assert h.counted == []
    assert not result.input_tokens_exact
    exact = h.ask(exact_tokens=True)
    assert len(h.counted) == 1
    assert exact.input_tokens_exact


# -- keys and cooldown state -------------------------------------------------------------------


def test_a_deployment_without_its_key_is_skipped_visibly_not_called_not_cooled():
    h = Harness(
        {"primary": [answer("no")], "fallback": [answer("ok")]},
        environ={"ANTHROPIC_API_KEY": "sk-ant"},
    )
    result = h.ask()
    assert result.attempts[0].outcome is Outcome.SKIPPED
    assert result.attempts[0].detail == "OPENAI_API_KEY not set"
    assert h.calls("primary") == 0
    assert h.store.entries() == []


def test_a_key_variable_that_cannot_be_a_key_is_skipped_never_sent_never_cooled():
    bad = "sk-test-primary\nsk-test-second-line"
    h = Harness(
        {"primary": [answer("no")], "fallback": [answer("ok")]},
        environ={**KEYS, "OPENAI_API_KEY": bad},
    )
    result = h.ask()
    assert result.answer == "ok"
    assert result.attempts[0].outcome is Outcome.SKIPPED
    assert result.attempts[0].detail == (
        "the environment variable OPENAI_API_KEY spans more than one line"
    )
    assert h.calls("primary") == 0
    assert h.store.entries() == []


def test_an_auth_cooldown_ends_when_the_key_changes_and_a_success_clears_it():
    store = MemoryStore()
    h = Harness({"primary": [failure(ErrorKind.AUTH)], "fallback": [answer("ok")]}, store=store)
    h.ask()
    assert h.ask().attempts[0].outcome is Outcome.SKIPPED  # same bad key: still cooling

    h.environ["OPENAI_API_KEY"] = "sk-rotated"
    h.providers["primary"].script[:] = [answer("new key works")]
    result = h.ask()
    assert result.deployment == "primary"
    assert store.entries() == []


def test_when_every_deployment_is_cooling_down_the_error_says_retry_later():
    h = Harness({"primary": [failure(ErrorKind.SERVER)], "fallback": [failure(ErrorKind.SERVER)]})
    first = h.ask()
    assert first.error is not None and first.error.kind is FailureKind.UNAVAILABLE
    second = h.ask()
    assert second.error is not None and second.error.kind is FailureKind.UNAVAILABLE
    assert [d.last_error[:12] for d in second.error.deployments] == ["cooling down"] * 2


def test_when_each_deployment_fails_the_error_lists_each_with_its_last_error():
    h = Harness(
        {
            "primary": [failure(ErrorKind.AUTH, detail="401 invalid_api_key")],
            "fallback": [failure(ErrorKind.QUOTA, detail="402 billing_error")],
        },
        environ={**KEYS, "GEMINI_API_KEY": "g"},
    )
    result = h.ask()
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.kind is FailureKind.EXHAUSTED
    assert {(d.name, d.last_error) for d in result.error.deployments} == {
        ("primary", "401 invalid_api_key"),
        ("fallback", "402 billing_error"),
    }


# -- streaming ---------------------------------------------------------------------------------


def test_a_stream_that_breaks_after_text_is_never_retried_or_failed_over():
    written: list[str] = []
    broken = Stream(("To reset ", "your pass"), then=failure(ErrorKind.NETWORK))
    h = Harness({"primary": [broken, answer("again")], "fallback": [answer("other")]})
    result = h.ask(on_text=written.append)
    assert "".join(written) == "To reset your pass"
    assert h.calls("primary") == 1
    assert h.calls("fallback") == 0
    assert result.status is Status.FAILED
    assert result.incomplete
    assert result.answer == "To reset your pass"
    assert result.attempts[-1].outcome is Outcome.STOPPED
    assert [c.deployment for c in h.store.entries()] == ["primary"]


def test_a_stream_that_fails_before_any_text_is_retried_like_any_failure():
    written: list[str] = []
    h = Harness(
        {
            "primary": [Stream((), then=failure(ErrorKind.OVERLOADED)), Stream(("fine",))],
            "fallback": [],
        }
    )
    result = h.ask(on_text=written.append)
    assert result.status is Status.ANSWERED
    assert written == ["fine"]
    assert h.calls("primary") == 2


# -- restarts for consumers that can take text back --------------------------------------------


def test_with_restarts_a_broken_stream_is_retried_and_the_restart_said_before_new_text():
    events: list[str] = []
    broken = Stream(("Open ", "Sett"), then=failure(ErrorKind.NETWORK, detail="reset"))
    h = Harness({"primary": [broken, Stream(("Open Settings.",))], "fallback": []})
    result = h.ask(
        on_text=lambda t: events.append(f"delta {t}"),
        on_restart=lambda d, why: events.append(f"restart {d}: {why}"),
    )
    assert events == [
        "delta Open ",
        "delta Sett",
        "restart primary: reset",
        "delta Open Settings.",
    ]
    assert (result.status, result.answer, result.incomplete) == (
        Status.ANSWERED,
        "Open Settings.",
        False,
    )
    assert decisions(result) == [("primary", "retry"), ("primary", "answered")]
    assert "the next attempt restarts it" in result.attempts[0].detail


def test_with_restarts_a_stream_cut_short_fails_over_and_restarts_on_the_fallback():
    events: list[str] = []

    class CutStream(ScriptedProvider):
        def complete(self, request, *, timeout, on_text=None, **_):  # type: ignore[no-untyped-def]
            self.requests.append(request)
            assert on_text is not None
            on_text("To reset ")
            return cut("To reset ")

    h = Harness({"primary": [], "fallback": [Stream(("Whole.",))]})
    h.factory.by_name["primary"] = CutStream("primary", [])
    result = h.ask(on_text=events.append, on_restart=lambda d, why: events.append(f"<{d}>"))
    assert events == ["To reset ", "<primary>", "Whole."]
    assert result.answer == "Whole." and result.deployment == "fallback"


def test_with_restarts_and_nothing_after_the_break_the_shown_text_is_the_incomplete_answer():
    restarts: list[str] = []
    broken = Stream(("Open ",), then=failure(ErrorKind.NETWORK, detail="reset"))
    h = Harness(
        {"primary": [broken, failure(ErrorKind.AUTH)], "fallback": [failure(ErrorKind.AUTH)]}
    )
    result = h.ask(on_text=lambda _: None, on_restart=lambda d, why: restarts.append(d))
    assert restarts == [], "no other text came to replace it"
    assert result.status is Status.FAILED and result.incomplete
    assert (result.answer, result.deployment) == ("Open ", "primary")
    assert result.error is not None and result.error.kind is FailureKind.INCOMPLETE


def test_without_restarts_a_broken_stream_still_stops_the_question():
    broken = Stream(("Open ",), then=failure(ErrorKind.NETWORK))
    h = Harness({"primary": [broken, Stream(("never",))], "fallback": []})
    result = h.ask(on_text=lambda _: None)
    assert decisions(result) == [("primary", "stopped")]
    assert h.calls("primary") == 1


# -- usage and cost --------------------------------------------------------------------------


def priced(d: Deployment, inp: float, out: float) -> Deployment:
    return replace(d, price=Price(input_per_mtok=inp, output_per_mtok=out))


def test_usage_is_the_providers_own_count_for_the_answer_and_null_when_unsaid():
    reply = Reply("Open Settings.", "stop", model="m", input_tokens=1200, output_tokens=40)
    h = Harness({"primary": [reply], "fallback": []})
    data = h.ask().as_json()
    assert data["usage"] == {"input_tokens": 1200, "output_tokens": 40}
    assert data["cost_usd"] is None, "no price configured: no cost"
    unsaid = Harness({"primary": [answer("ok")], "fallback": []}).ask().as_json()
    assert unsaid["usage"] == {"input_tokens": None, "output_tokens": None}


def test_cost_counts_every_priced_call_including_a_cut_short_one_that_was_paid_for():
    primary, fallback = deployments()
    config = Config(
        "Acme", (priced(primary, 0.15, 0.60), priced(fallback, 1.0, 5.0)), long_context=None
    )
    paid_for = Reply("To reset", "length", input_tokens=1000, output_tokens=400)
    paid_for = replace(paid_for, cut_short=ErrorKind.OUTPUT_LIMIT)
    whole = Reply("Whole answer.", "end_turn", input_tokens=1000, output_tokens=50)
    h = Harness({"primary": [paid_for], "fallback": [whole]}, config=config)
    result = h.ask()
    assert result.usage == Usage(1000, 50)
    first, second = result.attempts
    assert first.cost_usd == pytest.approx((1000 * 0.15 + 400 * 0.60) / 1e6)
    assert second.cost_usd == pytest.approx((1000 * 1.0 + 50 * 5.0) / 1e6)
    assert result.as_json()["cost_usd"] == pytest.approx(0.00039 + 0.00125)
    assert result.as_json()["attempts"][0]["usage"] == {  # type: ignore[index]
        "input_tokens": 1000,
        "output_tokens": 400,
    }


def test_a_call_whose_usage_is_half_known_has_no_cost():
    primary, fallback = deployments()
    config = Config("Acme", (priced(primary, 1, 1), fallback), long_context=None)
    h = Harness({"primary": [Reply("ok", "stop", input_tokens=10)], "fallback": []}, config=config)
    assert h.ask().cost_usd is None


# -- what gets reported ------------------------------------------------------------------------


def test_each_attempt_reaches_the_hook_before_its_wait_and_is_logged(caplog):
    order: list[str] = []
    h = Harness({"primary": [failure(ErrorKind.RATE_LIMIT), answer("ok")], "fallback": []})
    real_sleep = h.clock.sleep
    h.engine = Engine(
        h.config,
        providers=h.factory,
        store=h.store,
        clock=h.clock,
        sleeper=type("S", (), {"sleep": lambda self, s: (order.append("sleep"), real_sleep(s))})(),
        rng=FixedRandom(0.5),
        environ=h.environ,
        count_tokens=len,
        on_attempt=lambda a: order.append(f"attempt {a.outcome}"),
    )
    with caplog.at_level(logging.INFO, logger="support_ask.engine"):
        h.ask()
    assert order == ["attempt retry", "sleep", "attempt answered"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("primary #1 429 rate_limit -> retry" in m for m in messages)
    assert any("primary #2 200 ok -> answered" in m for m in messages)


def test_the_result_json_has_the_contract_shape():
    h = Harness({"primary": [failure(ErrorKind.RATE_LIMIT), answer("ok")], "fallback": []})
    data = h.ask().as_json()
    assert data["schema_version"] == 1
    assert data["status"] == "answered"
    assert data["deployment"] == "primary"
    assert data["provider"] == "openai"
    assert data["routed"] == "normal"
    assert set(data["attempts"][0]) == {  # type: ignore[index]
        "deployment",
        "key",
        "attempt",
        "status",
        "error_class",
        "decision",
        "wait_s",
        "elapsed_s",
        "detail",
        "usage",
        "cost_usd",
    }
    assert "error" not in data


def test_keys_never_reach_the_result():
    h = Harness({"primary": [failure(ErrorKind.AUTH)], "fallback": [failure(ErrorKind.AUTH)]})
    text = repr(h.ask().as_json())
    assert "sk-test-primary" not in text and "sk-ant-test" not in text


def test_one_adapter_per_deployment_and_key_is_built_and_closed_with_the_engine():
    h = Harness({"primary": [answer("ok")], "fallback": []})
    closed: list[str] = []
    h.providers["primary"].close = lambda: closed.append("primary")  # type: ignore[attr-defined]
    with h.engine:
        h.ask()
        h.ask()
        assert h.factory.built == ["primary"]
        h.environ["OPENAI_API_KEY"] = "sk-rotated"
        h.ask()
        assert h.factory.built == ["primary", "primary"], "a new key needs a new adapter"
    assert closed == ["primary", "primary"]


def test_a_deployment_whose_turn_begins_with_the_budget_spent_still_has_its_row():
    # Building the primary's adapter (a slow machine, a slow DNS-free setup) uses up what
    # was left: the primary must still appear, skipped for want of time, not vanish.
    h = Harness({"primary": [answer("never")], "fallback": [answer("never")]})
    build = h.factory

    def slow_factory(deployment, key):  # type: ignore[no-untyped-def]
        h.clock.advance(31.0)
        return build(deployment, key)

    h.engine._providers = slow_factory  # type: ignore[assignment]
    result = h.ask()
    assert [(a.deployment, str(a.outcome), a.detail) for a in result.attempts][:1] == [
        ("primary", "skipped", "no time left in the budget")
    ]
    assert h.calls("primary") == 0


def test_a_result_is_built_in_its_records_own_field_order() -> None:
    # The engine builds a Result by position (gateway.engine.results): a field added to or
    # moved in the record must be added or moved there too, or the JSON names it wrongly.
    from gateway.engine.results import RESULT_ORDER
    from gateway.model import Result

    assert Result.__record_names__ == RESULT_ORDER
