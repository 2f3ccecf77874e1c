"""One engine asking several questions at once (`support-ask batch`): a cooldown one
question takes holds every other question back before its next call, and each thread
keeps its own adapter (an adapter holds one connection)."""

from __future__ import annotations

import threading

from gateway.clock import FixedRandom, VirtualClock
from gateway.config import Config, Deployment, Policy
from gateway.engine.loop import Engine
from gateway.model import ErrorKind, ProviderKind, Reply, Request, Status
from gateway.secrets.key import Secret
from gateway.state.memory import MemoryStore
from tests.support.fakes import ScriptedProvider, answer, failure

KEYS = {"OPENAI_API_KEY": "sk-test-primary", "ANTHROPIC_API_KEY": "sk-ant-test"}
POLICY = Policy(retries=2, cooldown=60)
DEPLOYMENTS = (
    Deployment("primary", ProviderKind.OPENAI, 128_000, POLICY, "gpt-4o-mini", "OPENAI_API_KEY"),
    Deployment(
        "fallback", ProviderKind.ANTHROPIC, 200_000, POLICY, "claude-haiku-4-5", "ANTHROPIC_API_KEY"
    ),
)
REQUEST = Request("You answer support questions.", "How do I reset my password?", 400)


class Interleave:
    """A sleeper that runs `during` (another question) inside the first backoff wait."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.during: list[object] = []
        self.results: list[object] = []

    def sleep(self, seconds: float) -> None:
        self.clock.sleep(seconds)
        while self.during:
            action = self.during.pop(0)
            self.results.append(action())  # type: ignore[operator]


def engine_with(primary: object, fallback: object, clock: VirtualClock, sleeper: object) -> Engine:
    by_name = {"primary": primary, "fallback": fallback}
    return Engine(
        Config("Acme", DEPLOYMENTS),
        providers=lambda deployment, key: by_name[deployment.name],  # type: ignore[arg-type,return-value]
        store=MemoryStore(),
        clock=clock,
        sleeper=sleeper,  # type: ignore[arg-type]
        rng=FixedRandom(0.5),
        environ=KEYS,
        count_tokens=len,
    )


def test_a_question_about_to_retry_skips_a_deployment_another_question_cooled_meanwhile():
    clock = VirtualClock()
    # Call 1 (question A): a short rate limit, retried. Call 2 (question B, asked during
    # A's wait): a wait that does not fit the budget, so B fails over and cools primary.
    primary = ScriptedProvider(
        "primary",
        [
            failure(ErrorKind.RATE_LIMIT, retry_after=0.5),
            failure(ErrorKind.RATE_LIMIT, retry_after=600),
            answer("primary text"),
        ],
    )
    fallback = ScriptedProvider("fallback", [answer("fallback text")])
    sleeper = Interleave(clock)
    engine = engine_with(primary, fallback, clock, sleeper)
    sleeper.during.append(lambda: engine.ask(REQUEST))

    a = engine.ask(REQUEST)

    (b,) = sleeper.results
    assert b.status is Status.ANSWERED and b.deployment == "fallback"  # type: ignore[attr-defined]
    # A's retry never reached primary: B had cooled it while A waited.
    assert primary.calls == 2
    assert a.status is Status.ANSWERED and a.deployment == "fallback"
    skipped = a.attempts[1]
    assert (skipped.deployment, str(skipped.outcome)) == ("primary", "skipped")
    assert "cooling down" in skipped.detail and "another question" in skipped.detail


class AnswersAfterAnotherQuestion:
    """Primary: its first call is slow, and another question is asked while it runs (that
    one is rate-limited for long and cools primary); then the slow call answers."""

    def __init__(self) -> None:
        self.calls = 0
        self.during: object = None

    def complete(self, request: Request, *, timeout: float, **deadlines: object) -> Reply:
        from gateway.model import ProviderError

        self.calls += 1
        if self.calls == 2:
            raise ProviderError(failure(ErrorKind.RATE_LIMIT, retry_after=600))
        if self.calls == 1:
            self.during()  # type: ignore[misc]
        return answer("primary text")


def test_an_answer_from_a_deployment_releases_it_for_every_question():
    clock = VirtualClock()
    primary = AnswersAfterAnotherQuestion()
    fallback = ScriptedProvider("fallback", [answer("fallback text")])
    engine = engine_with(primary, fallback, clock, clock)
    inner: list[object] = []
    primary.during = lambda: inner.append(engine.ask(REQUEST))

    first = engine.ask(REQUEST)

    assert inner[0].deployment == "fallback"  # type: ignore[attr-defined]
    assert first.deployment == "primary"  # its call started before the cooldown, and answered
    # That answer proved primary healthy: the next question calls it again.
    after = engine.ask(REQUEST)
    assert after.deployment == "primary" and primary.calls == 3


def test_an_auth_cooldown_holds_back_only_calls_with_the_same_key():
    from gateway.engine.held import HeldDeployments
    from gateway.model import Cooldown

    held = HeldDeployments()
    held.hold(Cooldown("primary", "primary", 100.0, ErrorKind.AUTH, 0.0), Secret("old-key"))
    assert held.holding("primary", Secret("old-key"), 10.0) is not None
    assert held.holding("primary", Secret("new-key"), 10.0) is None
    assert held.holding("fallback", Secret("old-key"), 10.0) is None
    assert held.holding("primary", Secret("old-key"), 100.0) is None  # expired


def test_a_shorter_cooldown_never_shortens_a_longer_one():
    from gateway.engine.held import HeldDeployments
    from gateway.model import Cooldown

    held = HeldDeployments()
    held.hold(Cooldown("primary", "primary", 100.0, ErrorKind.RATE_LIMIT, 0.0))
    held.hold(Cooldown("primary", "primary", 50.0, ErrorKind.SERVER, 0.0))
    cooldown = held.holding("primary", None, 60.0)
    assert cooldown is not None and cooldown.until == 100.0


def test_each_thread_gets_its_own_adapter_and_keeps_it():
    built: list[tuple[str, int]] = []

    def providers(deployment: Deployment, key: Secret | None) -> ScriptedProvider:
        built.append((deployment.name, threading.get_ident()))
        return ScriptedProvider(deployment.name, [answer("ok")])

    clock = VirtualClock()
    engine = Engine(
        Config("Acme", DEPLOYMENTS),
        providers=providers,
        store=MemoryStore(),
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ=KEYS,
        count_tokens=len,
    )
    start = threading.Barrier(4)
    mine: dict[int, list[object]] = {}

    def worker() -> None:
        start.wait()
        got = [engine.provider_for(DEPLOYMENTS[0], Secret("k")) for _ in range(3)]
        mine[threading.get_ident()] = got

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(built) == 4  # one per thread, however they raced
    for got in mine.values():
        assert got[0] is got[1] is got[2]  # a thread keeps its adapter (its connection)
    assert len({id(got[0]) for got in mine.values()}) == 4


def test_a_key_another_question_cooled_gives_way_to_the_next_key_before_the_retry():
    from tests.gateway.engine.test_engine_fleet import KEYS as FLEET_KEYS
    from tests.gateway.engine.test_engine_fleet import fleet_config

    clock = VirtualClock()
    # Question A: key A is rate-limited briefly and A waits to retry. Meanwhile question B
    # finds key A refused (the key's own fault): B cools key A and answers with key B.
    primary = ScriptedProvider(
        "primary",
        [
            failure(ErrorKind.RATE_LIMIT, retry_after=0.5),
            failure(ErrorKind.AUTH),
            answer("from key B"),
            answer("from key B"),
        ],
    )
    fallback = ScriptedProvider("fallback", [answer("fallback text")])
    sleeper = Interleave(clock)
    by_name = {"primary": primary, "fallback": fallback}
    engine = Engine(
        fleet_config(),
        providers=lambda deployment, key: by_name[deployment.name],  # type: ignore[arg-type,return-value]
        store=MemoryStore(),
        clock=clock,
        sleeper=sleeper,
        rng=FixedRandom(0.5),
        environ={**FLEET_KEYS, "FALLBACK_KEY": "sk-ant-test-fallback"},
        count_tokens=len,
    )
    sleeper.during.append(lambda: engine.ask(REQUEST))

    a = engine.ask(REQUEST)

    (b,) = sleeper.results
    assert [(x.key, str(x.outcome)) for x in b.attempts] == [  # type: ignore[attr-defined]
        ("KEY_A", "fail_over"),
        ("KEY_B", "answered"),
    ]
    # A's retry went to key B at once: key A was not called again.
    assert [(x.key, str(x.outcome)) for x in a.attempts] == [
        ("KEY_A", "retry"),
        ("KEY_B", "answered"),
    ]
    assert primary.calls == 4
