"""The fallback engine: one loop that calls, records, sleeps and moves on.

Every decision comes from `gateway.policy`; this module only carries them out against the
seams it is given (providers, state store, clock, sleeper, random source), so a test can
drive a whole question, waits and all, in microseconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gateway.backoff import Budget
from gateway.config import Config, Deployment
from gateway.errors import cools_down
from gateway.model import (
    Attempt,
    Cooldown,
    DeploymentError,
    ErrorKind,
    Failure,
    FailureKind,
    Outcome,
    ProviderError,
    QuestionError,
    Reply,
    Request,
    Result,
    Status,
    TextSink,
)
from gateway.policy import Step, after_overflow, next_step, plan_route, window_shortfall
from gateway.seams import Clock, Provider, ProviderFactory, RandomSource, Sleeper, StateStore
from gateway.secret import Secret

log = logging.getLogger("support_ask.engine")


@dataclass(frozen=True)
class _Verdict:
    """How one deployment ended when it did not answer."""

    last_error: str
    transient: bool = False  # could clear by itself: cooling down, rate-limited, out of time
    unconfigured: bool = False  # skipped because its key is not set
    too_small: bool = False  # its window cannot hold the input
    rejected_input: Deployment | None = None  # it reported a context overflow


class _Finished(Exception):
    """Carries a final Result out of the per-deployment loop (an answer, a refusal, a stop)."""

    def __init__(self, result: Result) -> None:
        self.result = result


class Engine:
    def __init__(
        self,
        config: Config,
        *,
        providers: ProviderFactory,
        store: StateStore,
        clock: Clock,
        sleeper: Sleeper,
        rng: RandomSource,
        environ: Mapping[str, str],
        count_tokens: Callable[[str], int],
        on_attempt: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.config = config
        self._providers = providers
        self._store = store
        self._clock = clock
        self._sleeper = sleeper
        self._rng = rng
        self._environ = environ
        self._count_tokens = count_tokens
        self._on_attempt = on_attempt
        # One adapter per deployment and key for the engine's life: a kept-alive connection
        # is most of what a second question to the same provider saves.
        self._adapters: dict[tuple[str, Secret | None], Provider] = {}

    def provider_for(self, deployment: Deployment, key: Secret | None) -> Provider:
        adapter = self._adapters.get((deployment.name, key))
        if adapter is None:
            adapter = self._providers(deployment, key)
            self._adapters[(deployment.name, key)] = adapter
        return adapter

    def close(self) -> None:
        """Close every adapter built so far (their connection pools)."""
        adapters, self._adapters = list(self._adapters.values()), {}
        for adapter in adapters:
            close = getattr(adapter, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ask(
        self, request: Request, *, on_text: TextSink | None = None, exact_tokens: bool = False
    ) -> Result:
        """Answer one question through the deployments; never raises for a provider's fault."""
        return _Question(self, request, on_text, exact_tokens).run()

    def key_for(self, deployment: Deployment) -> tuple[Secret | None, str | None]:
        """The deployment's key, or why it cannot be called (its key variable is not set)."""
        if deployment.provider.offline or deployment.api_key_env is None:
            return None, None
        value = self._environ.get(deployment.api_key_env, "").strip()
        if not value:
            return None, f"{deployment.api_key_env} not set"
        return Secret(value), None


class _Question:
    """The state of one question: its budget, its attempts, each deployment's last word."""

    def __init__(
        self, engine: Engine, request: Request, on_text: TextSink | None, exact_tokens: bool
    ) -> None:
        self.e = engine
        self.config = engine.config
        self.request = request
        self.on_text = on_text
        self.clock = engine._clock
        self.budget = Budget(self.clock.monotonic(), self.config.policy.budget)
        self.attempts: list[Attempt] = []
        self.verdicts: dict[str, _Verdict] = {}
        tokens, self.tokens_exact = self._input_tokens(exact_tokens)
        self.plan = plan_route(self.config, tokens)

    # -- set-up ---------------------------------------------------------------------------

    def _input_tokens(self, exact: bool) -> tuple[int, bool]:
        text = self.request.system + "\n" + self.request.question
        # Every cl100k token is at least one byte, so the UTF-8 length bounds the count from
        # above. When even that bound fits every window, the exact count cannot change a
        # routing decision and loading the tokenizer (the slowest part of start-up) is skipped.
        bound = len(text.encode("utf-8"))
        smallest = min(d.context_window for d in self.config.all_deployments())
        if exact or bound + self.config.max_output_tokens > smallest:
            return self.e._count_tokens(text), True
        return bound, False

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Result:
        cooling = self.e._store.active(
            self.clock.wall(),
            {d.name: self.e.key_for(d)[0] for d in self.config.all_deployments()},
        )
        queue = list(self.plan.candidates)
        try:
            while queue:
                deployment = queue.pop(0)
                verdict = self._skip_reason(deployment, cooling) or self._call(deployment)
                self.verdicts[deployment.name] = verdict
                if verdict.rejected_input is not None:
                    queue = after_overflow(
                        self.config, verdict.rejected_input, queue, self.verdicts
                    )
        except _Finished as done:
            return done.result
        return self._failed()

    def _skip_reason(self, d: Deployment, cooling: Mapping[str, Cooldown]) -> _Verdict | None:
        shortfall = window_shortfall(self.config, self.plan.input_tokens, d)
        if shortfall is not None:
            return self._skip(d, shortfall, too_small=True)
        _, missing = self.e.key_for(d)
        if missing is not None:
            return self._skip(d, missing, unconfigured=True)
        cooldown = cooling.get(d.name)
        if cooldown is not None:
            left = cooldown.until - self.clock.wall()
            why = f"cooling down for {left:.0f} s after {cooldown.kind}"
            return self._skip(d, why, transient=True)
        # An offline deployment answers in milliseconds, inside the budget's margin: with
        # the budget spent it is still the customer's best chance of an answer.
        if self.budget.left(self.clock.monotonic()) <= 0 and not d.provider.offline:
            return self._skip(d, "no time left in the budget", transient=True)
        return None

    def _skip(
        self,
        d: Deployment,
        why: str,
        *,
        transient: bool = False,
        unconfigured: bool = False,
        too_small: bool = False,
    ) -> _Verdict:
        self._record(Attempt(d.name, 0, None, None, Outcome.SKIPPED, 0.0, 0.0, why))
        return _Verdict(why, transient=transient, unconfigured=unconfigured, too_small=too_small)

    def _call(self, d: Deployment) -> _Verdict:
        """Call one deployment until it answers, fails over, or the question ends."""
        key, _ = self.e.key_for(d)
        provider = self.e.provider_for(d, key)
        mine = Budget(self.clock.monotonic(), d.policy.budget)
        retries = 0
        number = 0
        while True:
            now = self.clock.monotonic()
            left = min(self.budget.left(now), mine.left(now))
            if left <= 0 and not d.provider.offline:
                return _Verdict("no time left in the budget", transient=True)
            number += 1
            emitted = False

            def sink(text: str) -> None:
                nonlocal emitted
                emitted = True
                assert self.on_text is not None
                self.on_text(text)

            started = self.clock.monotonic()
            try:
                reply = provider.complete(
                    self.request,
                    timeout=min(d.policy.timeout, left),
                    on_text=sink if self.on_text is not None else None,
                )
            except ProviderError as exc:
                failure, partial = exc.failure, exc.partial
            else:
                self._answered(d, number, reply, self.clock.monotonic() - started)
            elapsed = self.clock.monotonic() - started
            if emitted or partial:
                self._stopped(d, number, failure, partial, elapsed)
            now = self.clock.monotonic()
            step = next_step(
                failure,
                retries_done=retries,
                policy=d.policy,
                budget=Budget(now, min(self.budget.left(now), mine.left(now))),
                now=now,
                rand=self.e._rng.random(),
                took=elapsed,
            )
            self._record_failure(d, number, failure, step.outcome, elapsed, step.wait, step.note)
            if step.outcome is Outcome.RETRY:
                self.e._sleeper.sleep(step.wait)
                retries += 1
                continue
            self._cool(d, failure, step)
            if step.outcome is Outcome.FATAL:
                self._fatal(d, failure, partial)
            return _Verdict(
                failure.detail,
                transient=step.transient,
                rejected_input=d if failure.kind is ErrorKind.CONTEXT_WINDOW else None,
            )

    # -- endings --------------------------------------------------------------------------

    def _record(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        log.info(
            "%s #%d %s%s -> %s (wait %.2f s, %.3f s) %s",
            attempt.deployment,
            attempt.attempt,
            "" if attempt.status is None else f"{attempt.status} ",
            attempt.error_class or "ok",
            attempt.decision,
            attempt.wait_s,
            attempt.elapsed_s,
            attempt.detail,
        )
        if self.e._on_attempt is not None:
            self.e._on_attempt(attempt)

    def _cool(self, d: Deployment, failure: Failure, step: Step) -> None:
        if step.cooldown is None:
            return
        now = self.clock.wall()
        key, _ = self.e.key_for(d)
        self.e._store.cool(
            d.name,
            until=now + step.cooldown,
            kind=failure.kind,
            now=now,
            detail=failure.detail,
            # An auth cooldown ends as soon as the key changes: the fix is a new key.
            credential=key if failure.kind is ErrorKind.AUTH else None,
        )

    def _record_failure(
        self,
        d: Deployment,
        number: int,
        failure: Failure,
        outcome: Outcome,
        elapsed: float,
        wait: float = 0.0,
        note: str = "",
    ) -> None:
        detail = f"{failure.detail} ({note})" if note else failure.detail
        self._record(
            Attempt(d.name, number, failure.status, failure.kind, outcome, wait, elapsed, detail)
        )

    def _result(
        self,
        status: Status,
        d: Deployment | None,
        *,
        answer: str | None = None,
        model: str | None = None,
        error: QuestionError | None = None,
        incomplete: bool = False,
    ) -> Result:
        return Result(
            status=status,
            answer=answer,
            deployment=None if d is None else d.name,
            provider=None if d is None else str(d.provider),
            model=model or (None if d is None else d.model),
            routed=self.plan.route,
            input_tokens=self.plan.input_tokens,
            input_tokens_exact=self.tokens_exact,
            elapsed_s=self.clock.monotonic() - self.budget.start,
            attempts=tuple(self.attempts),
            error=error,
            incomplete=incomplete,
        )

    def _answered(self, d: Deployment, number: int, reply: Reply, elapsed: float) -> None:
        # A refusal is an answer too: the deployment is healthy, and no other should be asked.
        if reply.refused:
            log.warning("%s refused the question: %s", d.name, reply.text[:200])
        self._record(
            Attempt(
                d.name,
                number,
                None if d.provider.offline else 200,  # no HTTP status offline
                ErrorKind.REFUSAL if reply.refused else None,
                Outcome.FATAL if reply.refused else Outcome.ANSWERED,
                0.0,
                elapsed,
            )
        )
        self.e._store.clear(d.name)
        status = Status.REFUSED if reply.refused else Status.ANSWERED
        raise _Finished(self._result(status, d, answer=reply.text, model=reply.model))

    def _stopped(
        self, d: Deployment, number: int, failure: Failure, partial: str, elapsed: float
    ) -> None:
        # Text already reached the user: a retry would repeat it, a fallback would splice two
        # answers. Report the break, keep what was written, and cool the deployment down.
        self._record_failure(
            d, number, failure, Outcome.STOPPED, elapsed, note="after text was written: not retried"
        )
        if cools_down(failure.kind):
            self._cool(d, failure, Step(Outcome.STOPPED, cooldown=d.policy.cooldown))
        error = QuestionError(
            FailureKind.INCOMPLETE,
            f"the answer from {d.name} broke off: {failure.detail}",
            (DeploymentError(d.name, failure.detail),),
        )
        raise _Finished(
            self._result(Status.FAILED, d, answer=partial, error=error, incomplete=True)
        )

    def _fatal(self, d: Deployment, failure: Failure, partial: str) -> None:
        if failure.kind is ErrorKind.REFUSAL:
            log.warning("%s refused the question: %s", d.name, failure.detail)
            raise _Finished(self._result(Status.REFUSED, d, answer=partial or failure.detail))
        error = QuestionError(
            FailureKind.BAD_REQUEST,
            f"{d.name} rejected the request as malformed: {failure.detail}",
            (DeploymentError(d.name, failure.detail),),
        )
        raise _Finished(self._result(Status.FATAL, d, error=error))

    def _failed(self) -> Result:
        verdicts = self.verdicts
        lines = tuple(DeploymentError(name, v.last_error) for name, v in verdicts.items())
        if verdicts and all(v.too_small or v.rejected_input for v in verdicts.values()):
            error = QuestionError(
                FailureKind.TOO_LARGE,
                f"the input ({self.plan.input_tokens:,} tokens) is too large for every deployment",
                lines,
            )
            return self._result(Status.FATAL, None, error=error)
        transient = [v for v in verdicts.values() if v.transient]
        if transient and all(v.transient or v.unconfigured for v in verdicts.values()):
            error = QuestionError(
                FailureKind.UNAVAILABLE,
                "every deployment is cooling down, rate-limited or out of time: retry later",
                lines,
            )
        else:
            error = QuestionError(FailureKind.EXHAUSTED, "no deployment could answer", lines)
        return self._result(Status.FAILED, None, error=error)
