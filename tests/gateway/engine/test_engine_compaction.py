"""Compaction, not refusal: a deployment whose window is smaller than the request, or that
reports an overflow, is sent a request with less of the help centre (the Compactor seam)."""

from __future__ import annotations

from gateway.clock import FixedRandom, VirtualClock
from gateway.config import Config, Deployment, Policy
from gateway.engine.loop import Engine
from gateway.model import ErrorKind, FailureKind, Outcome, ProviderKind, Request, Source, Status
from gateway.state.memory import MemoryStore
from tests.support.fakes import ScriptedFactory, ScriptedProvider, answer, failure

KEYS = {"OPENAI_API_KEY": "sk-test-primary", "ANTHROPIC_API_KEY": "sk-ant-test"}
QUESTION = "How do I reset my password?"
SMALL = Deployment("small", ProviderKind.OPENAI, 8_000, Policy(), "gpt-4o-mini", "OPENAI_API_KEY")
BIG = Deployment(
    "big", ProviderKind.ANTHROPIC, 200_000, Policy(), "claude-haiku-4-5", "ANTHROPIC_API_KEY"
)
LOCAL = Deployment("local", ProviderKind.LOCAL, 1_000)


def sent(tokens: int) -> Source:
    return Source("kb/a.md", "A", "", "", tokens, 0, 0, score=1.0, coverage=1.0)


def request(tokens: int) -> Request:
    """A request of `tokens` tokens as the harness counts them (4 characters each)."""
    system = "p" * (4 * tokens - len(QUESTION) - 1)
    return Request(system, QUESTION, 400, sources=(sent(tokens),))


class Passages:
    """A Compactor: a request of the size asked for (its estimate runs `over` high)."""

    def __init__(self, *, smallest: int = 100, over: float = 1.0) -> None:
        self.asked: list[int] = []
        self.smallest = smallest
        self.over = over

    def within(self, tokens: int) -> Request | None:
        self.asked.append(tokens)
        if tokens < self.smallest:
            return None  # the prompt and the question alone are more
        return request(int(tokens * self.over))


def ask(
    deployments: tuple[Deployment, ...],
    scripts: dict[str, list[object]],
    size: int,
    compact: Passages | None,
) -> tuple[object, dict[str, ScriptedProvider]]:
    clock = VirtualClock()
    providers = {
        d.name: ScriptedProvider(d.name, list(scripts.get(d.name, [answer(d.name)])), clock)  # type: ignore[arg-type]
        for d in deployments
    }
    engine = Engine(
        Config("Acme", deployments, long_context=None),
        providers=ScriptedFactory(list(providers.values())),
        store=MemoryStore(),
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ=KEYS,
        count_tokens=lambda text: len(text) // 4,
    )
    return engine.ask(request(size), compact=compact), providers


def test_a_window_too_small_for_the_request_is_sent_fewer_passages() -> None:
    compact = Passages()
    result, providers = ask((SMALL, BIG), {}, 20_000, compact)
    assert result.status is Status.ANSWERED and result.deployment == "small"  # type: ignore[attr-defined]
    asked = providers["small"].requests[0]
    assert len(asked.system + "\n" + asked.question) // 4 <= 8_000 - 400
    assert compact.asked == [7_600]  # its window less the reply
    assert result.articles == (sent(7_600),)  # type: ignore[attr-defined]
    assert result.input_tokens == 7_600 and result.input_tokens_exact  # type: ignore[attr-defined]


def test_without_a_compactor_a_small_window_is_passed_over_as_before() -> None:
    result, providers = ask((SMALL, BIG), {}, 20_000, None)
    assert result.deployment == "big"  # type: ignore[attr-defined]
    assert providers["small"].calls == 0
    assert result.attempts[0].outcome is Outcome.SKIPPED  # type: ignore[attr-defined]
    assert result.articles == (sent(20_000),)  # type: ignore[attr-defined]


def test_an_estimate_that_misses_is_asked_again_for_less() -> None:
    compact = Passages(over=1.25)  # its passages come out a quarter bigger than it says
    result, providers = ask((SMALL,), {}, 20_000, compact)
    assert result.deployment == "small"  # type: ignore[attr-defined]
    assert len(compact.asked) == 2 and compact.asked[1] < 7_600
    asked = providers["small"].requests[0]
    assert len(asked.system + "\n" + asked.question) // 4 <= 7_600


def test_a_reported_overflow_is_answered_by_the_same_deployment_with_less() -> None:
    overflow = failure(ErrorKind.CONTEXT_WINDOW, detail="maximum context length")
    compact = Passages()
    result, providers = ask((BIG,), {"big": [overflow, answer("fits")]}, 20_000, compact)
    assert result.status is Status.ANSWERED and result.answer == "fits"  # type: ignore[attr-defined]
    first, second = (len(r.system) // 4 for r in providers["big"].requests)
    assert second < first * 0.7
    retry = result.attempts[0]  # type: ignore[attr-defined]
    assert retry.outcome is Outcome.RETRY and "sent again with fewer passages" in retry.detail
    assert result.articles[0].tokens < 20_000  # type: ignore[attr-defined]


def test_an_overflow_that_keeps_coming_fails_over_after_two_smaller_tries() -> None:
    overflow = failure(ErrorKind.CONTEXT_WINDOW, detail="maximum context length")
    result, providers = ask(
        (BIG, SMALL), {"big": [overflow], "small": [overflow]}, 20_000, Passages()
    )
    assert providers["big"].calls == 3
    assert result.status is not Status.ANSWERED  # type: ignore[attr-defined]
    assert result.error.kind is FailureKind.TOO_LARGE  # type: ignore[attr-defined]


def test_only_a_question_that_alone_exceeds_every_window_is_too_large() -> None:
    result, providers = ask((SMALL, BIG), {}, 500_000, Passages(smallest=300_000))
    assert result.status is Status.FATAL  # type: ignore[attr-defined]
    assert result.error.kind is FailureKind.TOO_LARGE  # type: ignore[attr-defined]
    assert sum(p.calls for p in providers.values()) == 0


def test_the_offline_deployment_is_never_too_small() -> None:
    result, providers = ask((SMALL, LOCAL), {"small": [answer("no")]}, 500_000, None)
    assert result.deployment == "local"  # type: ignore[attr-defined]
    assert providers["local"].requests[0].sources == (sent(500_000),)  # the whole selection


def test_the_caller_is_told_each_request_as_it_is_sent_compacted_or_not() -> None:
    """A stream checks its markers against the passages of the request really sent."""
    told: list[Request] = []
    clock = VirtualClock()
    providers = [ScriptedProvider(d.name, [answer(d.name)], clock) for d in (SMALL, BIG)]
    engine = Engine(
        Config("Acme", (SMALL, BIG), long_context=None),
        providers=ScriptedFactory(providers),
        store=MemoryStore(),
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ=KEYS,
        count_tokens=lambda text: len(text) // 4,
    )
    result = engine.ask(request(20_000), compact=Passages(), on_send=told.append)
    assert result.status is Status.ANSWERED
    assert told == providers[0].requests  # the compacted one, before the call
    assert told[0].sources == (sent(7_600),)
