"""The fallback engine: one loop that calls, records, sleeps and moves on.

Every decision comes from `gateway.engine.policy`; this module only carries them out against the
seams it is given (providers, state store, clock, sleeper, random source), so a test can
drive a whole question, waits and all, in microseconds. Each attempt ends in a value
(`policy.Ending`: answered, refused, stopped, fatal, or failed with the next step) and the
loop in `_Question.run` is the one place that acts on it. What it acts with is each in its
own module: the request fitted to each window (fitting), whose turn it is and what is
written back to the shared state (turns), the attempts' rows (record), and the verdicts
and the result (results).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from gateway.config import Config, Deployment
from gateway.engine import allowances, credentials
from gateway.engine.backoff import Budget
from gateway.engine.credentials import Keys, KeySet
from gateway.engine.fitting import Fitting, Windows
from gateway.engine.held import HeldDeployments
from gateway.engine.policy import (
    Answered,
    Ending,
    Failed,
    Refused,
    Stopped,
    after_overflow,
    is_answer,
    judge,
    over_limit,
    over_retry_budget,
)
from gateway.engine.record import Record
from gateway.engine.results import Reason, Results, Verdict
from gateway.engine.table import TABLE
from gateway.engine.turns import DeploymentTurn, Turns, TurnSeams
from gateway.limits import rules
from gateway.model import (
    Attempt,
    ErrorKind,
    Failure,
    Outcome,
    ProviderError,
    Reply,
    Request,
    RestartSink,
    Result,
    TextSink,
)
from gateway.record import record, replace
from gateway.seams import (
    Allowance,
    Clock,
    Compactor,
    Provider,
    ProviderFactory,
    RandomSource,
    Sleeper,
    StateStore,
)
from gateway.secrets.key import Secret


@record
class _Seams:
    """What every question is given by the engine that asks it (built once, with the
    engine: none of it changes between questions); a question reaches for nothing else."""

    clock: Clock
    sleeper: Sleeper
    rng: RandomSource
    count_tokens: Callable[[str], int]
    on_attempt: Callable[[Attempt], None] | None
    keys: Callable[[], KeySet]  # every deployment's keys as the environment holds them now
    allowance: Allowance | None
    turns: TurnSeams
    windows: Windows  # what the config's windows decide alike for every question


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
        allowance: Allowance | None = None,
    ) -> None:
        """`allowance`: the fleet's shared limits and retry budget (None: neither)."""
        self.config = config
        self._allowance = allowance
        self._providers = providers
        self._store = store
        self._clock = clock
        self._sleeper = sleeper
        self._rng = rng
        self._environ = environ
        self._count_tokens = count_tokens
        self._on_attempt = on_attempt
        # One adapter per deployment, key and thread for the engine's life: a kept-alive
        # connection is most of what a second question to the same provider saves, and an
        # adapter holds one connection, so questions asked at once on several threads
        # (`support-ask batch`) each get their own.
        self._adapters: dict[tuple[str, Secret | None, int], Provider] = {}
        self._adapters_lock = threading.Lock()
        self._held = HeldDeployments()
        self._keys = credentials.KeyRing(config, environ)
        deployments = config.all_deployments()
        rotating = tuple(d.name for d in deployments if credentials.rotates(d))
        self._seams = _Seams(
            clock=clock,
            sleeper=sleeper,
            rng=rng,
            count_tokens=count_tokens,
            on_attempt=on_attempt,
            keys=self._keys.now,
            allowance=allowance,
            turns=TurnSeams(store, self._held, clock, self.provider_for, rotating),
            windows=Windows.of(config),
        )

    def provider_for(self, deployment: Deployment, key: Secret | None) -> Provider:
        slot = (deployment.name, key, threading.get_ident())
        adapter = self._adapters.get(slot)  # a dict's get is atomic: no lock to find one
        if adapter is not None:
            return adapter
        with self._adapters_lock:
            adapter = self._adapters.get(slot)
            if adapter is None:
                adapter = self._adapters[slot] = self._providers(deployment, key)
        return adapter

    def close(self) -> None:
        """Close every adapter built so far (their connection pools)."""
        with self._adapters_lock:
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
        self,
        request: Request,
        *,
        on_text: TextSink | None = None,
        exact_tokens: bool = False,
        started: float | None = None,
        on_restart: RestartSink | None = None,
        compact: Compactor | None = None,
        on_interrupt: Callable[[Result], None] | None = None,
        on_send: Callable[[Request], None] | None = None,
    ) -> Result:
        """Answer one question through the deployments; never raises for a provider's fault.

        `started` is when the question began on the clock's monotonic time (the CLI passes
        its process start, so work done before the engine, like reading the articles, is
        spent from the same budget); by default, now. With `on_restart`, a stream that
        breaks after text is retried or failed over like any failure, and `on_restart` is
        told just before the next attempt's first text; without it, such a stream stops
        the question (the text cannot be taken back). With `compact`, a deployment whose
        window cannot hold the request, or that reports an overflow, is sent a smaller one
        built to fit it, rather than passed over. A KeyboardInterrupt (Ctrl-C, a stop
        signal) goes on to the caller as it came, after `on_interrupt` is told the
        question's result so far: its attempts, the call in flight marked interrupted.
        `on_send` is told each request just before a deployment is called with it (a
        compacted one holds fewer passages: a stream checks its markers against them)."""
        # Every wait and call of this question is measured from its start.
        start = self._clock.monotonic() if started is None else started
        question = _Question(
            self.config, request, self._seams, start, on_text, exact_tokens, compact, on_restart
        )
        question.on_send = on_send
        try:
            return question.run()
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt(question.results.interrupted(question.asking))
            raise

    def keys_for(self, deployment: Deployment) -> Keys:
        """The deployment's usable keys, and why the others cannot be used: a variable not
        set, or holding what cannot be a key (never sent, so never echoed, never cooled)."""
        return self._keys.keys_for(deployment)


_SHRUNK = "sent again with fewer passages"


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


class _Question:
    """One question: the deployments still to try, each one's verdict, and the loop."""

    def __init__(
        self,
        config: Config,
        request: Request,
        seams: _Seams,
        start: float,  # on the monotonic clock: the question's budget is counted from it
        on_text: TextSink | None,
        exact_tokens: bool,
        compact: Compactor | None,
        on_restart: RestartSink | None,
    ) -> None:
        self.config = config
        self.seams = seams
        self.clock = seams.clock
        self.on_text = on_text
        self.on_restart = on_restart
        self.on_send: Callable[[Request], None] | None = None
        fitting = Fitting(config, request, compact, seams.count_tokens, exact_tokens, seams.windows)
        self.fitting = fitting
        # The keys are read once per question: one rotated meanwhile is the next one's.
        self.keys = seams.keys()
        deadline = start + config.policy.budget
        self.turns = Turns(config, deadline, seams.turns, self.keys.keys_for)
        self.record = Record(seams.on_attempt)
        self.results = Results(fitting, self.record.attempts, seams.clock, start)
        self.queue = list(fitting.plan.candidates)  # the deployments not taken up yet
        self.verdicts: dict[str, Verdict] = {}
        # The first cut-short reply: returned, marked incomplete, if nothing better comes.
        self.kept: tuple[Deployment, Reply, Failure] | None = None
        # With restarts: the broken attempt whose text is still on the customer's screen
        # (the restart is said only when another attempt has text to replace it).
        self.shown: tuple[Deployment, str, Failure] | None = None
        self.asking: Deployment | None = None  # the deployment called last

    def run(self) -> Result:
        """One loop: take the next deployment, call it, and act on how the call ended."""
        self.turns.read(self.keys.current)
        turn: DeploymentTurn | None = None
        while True:
            if turn is None:
                if not self.queue:
                    return self.results.failed(self.verdicts, self.shown, self.kept)
                turn = self._take(self.queue.pop(0))
            elif self._cut_off(turn) or not self._paced(turn):
                turn = None
            else:
                ending, elapsed, wrote = self._attempt(turn)
                if isinstance(ending, Reply):
                    return self._answered(turn, ending, elapsed)
                if not isinstance(ending, Failed):
                    return self._finish(turn, ending, elapsed)
                if not self._goes_on(turn, ending, elapsed, wrote):
                    turn = None

    def _take(self, d: Deployment) -> DeploymentTurn | None:
        """`d`'s turn; None when it cannot be called now (its verdict given)."""
        too_small = self.fitting.too_small(d)
        begun = self.turns.begin(d) if too_small is None else Verdict(Reason.TOO_SMALL, too_small)
        if isinstance(begun, DeploymentTurn):
            return begun
        self._pass_over(d, begun)
        return None

    def _barrier(self, d: Deployment) -> Verdict | None:
        """Why `d` cannot be called now (None: it can). Records nothing."""
        too_small = self.fitting.too_small(d)
        if too_small is not None:
            return Verdict(Reason.TOO_SMALL, too_small)
        return self.turns.barrier(d)

    def _cut_off(self, turn: DeploymentTurn) -> bool:
        """Whether `turn` ends before its next call (its verdict given): the budget ran out,
        or another question of this engine cooled it (or its key) since this one looked."""
        d = turn.deployment
        # A turn's first call is checked as of when its turn began (its adapter ready):
        # nothing comes between the two.
        now = turn.began if turn.calls == 0 else self.clock.monotonic()
        if self._left(turn, now) <= 0 and not d.provider.offline:
            verdict = Verdict(Reason.OUT_OF_TIME, "no time left in the budget")
            if turn.calls == 0:
                # The budget ran out while its turn began: still a row, so every
                # deployment the question reached shows in the table and the log.
                self.record.skip(d, verdict.detail)
            self.verdicts[d.name] = verdict
            return True
        # Cooled by another question since: not called again, whatever this one knew.
        held = self.turns.held_back(turn)
        if held is not None:
            self._pass_over(d, held)
        return held is not None

    def _paced(self, turn: DeploymentTurn) -> bool:
        """Take the turn's next call's place in the fleet's shared limits, waiting for it
        when that fits the budget; False (its verdict given) when it does not, as for a
        Retry-After beyond the budget. A key's limit gives way to the next key first."""
        allowance, d = self.seams.allowance, turn.deployment
        if allowance is None or d.provider.offline:
            return True
        tokens = self.fitting.input_tokens + self.config.max_output_tokens
        claims = allowances.claims(self.config, d, turn.key, tokens)
        count = allowances.retry_budget(d) if turn.calls == 0 else None
        if not claims and count is None:
            return True
        behind, first = 0.0, ""  # the waits for a cold allowance's first call
        while True:
            now = self.clock.monotonic()
            budget = Budget(now, self._left(turn, now))
            grant = allowance.draw(
                claims,
                now=self.clock.wall(),
                most_wait=max(0.0, budget.longest_wait(now)),
                hold=d.policy.timeout,
                count=count,
            )
            if not grant.first_call_out or grant.wait > budget.longest_wait(now):
                break
            # A cold allowance's first call is out: look again once it may have settled.
            self.seams.sleeper.sleep(grant.wait)
            behind, first = behind + grant.wait, grant.blocking
        if behind > 0:
            self.record.waited(turn, behind, f"waited for the limit {first}")
        if not grant.granted:
            step = over_limit(grant.wait, grant.blocking, budget, now)
            if allowances.is_key(grant.allowance) and self.turns.next_key(turn):
                spare = "" if turn.key is None else f"; next: its key {turn.key.variable}"
                self.record.waited(turn, 0.0, step.note + spare)
                return self._paced(turn)
            self._pass_over(d, Verdict(Reason.FAILED_FOR_NOW, step.note, ErrorKind.RATE_LIMIT))
            return False
        if grant.wait > 0:
            self.record.waited(turn, grant.wait, f"waited for the limit {grant.blocking}")
            self.seams.sleeper.sleep(grant.wait)
        turn.grant = grant
        return True

    def _settle(self, turn: DeploymentTurn, result: Reply | Failure, sent: float) -> None:
        """Give the turn's place in the shared limits back: what the provider reported it
        used replaces what was reserved (a failure's reservation stands: it may have been
        counted), and what its headers said is left tightens the key's allowance (as of
        `sent`, when the call was made: the provider counted it then)."""
        grant, turn.grant = turn.grant, None
        if grant is None or self.seams.allowance is None:
            return
        used = None
        if isinstance(result, Reply) and result.input_tokens is not None:
            used = result.input_tokens + (result.output_tokens or 0)
        tightening = None
        if result.headroom is not None and turn.key is not None:
            # The provider's word on what is left of the key: a window nearly spent (by
            # this fleet or another application) books its allowance ahead.
            name = allowances.provider(turn.deployment, turn.key.variable)
            ago = self.clock.monotonic() - sent
            tightening = rules.tightening(result.headroom, name, grant.claims, ago=ago)
        self.seams.allowance.settle(
            grant,
            used=used,
            now=self.clock.wall(),
            tightening=tightening,
            answered=isinstance(result, Reply),
        )

    def _may_retry(self, d: Deployment) -> bool:
        """Whether the fleet's retry budget for `d` has room for one more retry."""
        allowance = self.seams.allowance
        if allowance is None or d.provider.offline:
            return True
        name = allowances.retry_budget(d)
        return allowance.retry(name, share=d.policy.retry_budget, now=self.clock.wall())

    def _pass_over(self, d: Deployment, verdict: Verdict) -> None:
        self.record.skip(d, verdict.detail)
        self.verdicts[d.name] = verdict

    def _left(self, turn: DeploymentTurn, now: float) -> float:
        """The time left for `turn` at `now`: its budget's, or the question's if less."""
        left = turn.until - now
        return left if left > 0.0 else 0.0

    def _attempt(self, turn: DeploymentTurn) -> tuple[Ending | Reply, float, bool]:
        """Call the deployment once: how the call ended (a reply that is a whole answer as
        itself), how long it took, whether it streamed text to the customer."""
        d = turn.deployment
        turn.calls += 1
        wrote = False
        sink: TextSink | None = None
        if self.on_text is not None:
            on_text = self.on_text

            def write(text: str) -> None:
                nonlocal wrote
                if self.shown is not None and self.on_restart is not None:
                    # This attempt's text replaces what a broken one left on the screen.
                    broken, _, failure = self.shown
                    self.shown = None
                    self.on_restart(broken.name, failure.detail)
                wrote = True
                on_text(text)

            sink = write

        # The last deployment that can still be tried is never cut off for a slow start:
        # there is nothing faster to move on to.
        alternatives = bool(self.queue) and any(self._barrier(o) is None for o in self.queue)
        started = self.clock.monotonic()
        partial = ""
        result: Reply | Failure
        self.asking = d
        sent = self.fitting.request_for(d)
        if self.on_send is not None:
            self.on_send(sent)
        try:
            result = turn.provider.complete(
                sent,
                timeout=min(d.policy.timeout, self._left(turn, started)),
                on_text=sink,
                first_token=d.policy.first_token_timeout if alternatives else None,
                stall=d.policy.stall_timeout,
            )
        except ProviderError as exc:
            result, partial = exc.failure, exc.partial
        except KeyboardInterrupt:
            # Stopped by the user while it waited: still a call the question made.
            self.record.interrupted(turn, self.clock.monotonic() - started)
            raise
        if turn.grant is not None:
            self._settle(turn, result, started)
        now = self.clock.monotonic()
        if is_answer(result):
            return result, now - started, wrote
        ending = judge(
            result,
            partial=partial,
            wrote=wrote,
            retries_done=turn.retries,
            # The probe is one call: a deployment just back from a cooldown that fails
            # again is not worth the customer's time in retries.
            policy=replace(d.policy, retries=0) if turn.probe else d.policy,
            budget=Budget(now, self._left(turn, now)),
            now=now,
            draw=self.seams.rng.random,
            took=now - started,
            alternatives=alternatives,
            restartable=self.on_restart is not None,
        )
        if wrote and isinstance(ending, Failed):
            text = partial or (ending.reply.text if ending.reply is not None else "")
            self.shown = (d, text, ending.failure)
        return ending, now - started, wrote

    def _goes_on(self, turn: DeploymentTurn, ending: Failed, elapsed: float, wrote: bool) -> bool:
        """Act on a failed attempt: whether the turn goes on (a retry, fewer passages, the
        next key); when it does not, the deployment's verdict is given."""
        d, failure, step = turn.deployment, ending.failure, ending.step
        if failure.kind is ErrorKind.CONTEXT_WINDOW and self.fitting.shrink(d):
            # The same deployment again at once, with fewer passages: nothing is wrong
            # with it, and a larger window elsewhere may cost more or not exist.
            self.record.failure(turn, failure, Outcome.RETRY, elapsed, 0.0, _SHRUNK)
            return True
        if step.outcome is Outcome.RETRY and not self._may_retry(d):
            step = over_retry_budget(failure, d.policy)
        # A failure that is the key's (bad key, quota, its rate limit) cools that key for
        # this deployment alone (another naming the same variable is still tried with
        # it), and the deployment's next key is tried at once; any other failure cools
        # the deployment.
        key = turn.key if step.outcome is Outcome.FAIL_OVER else None
        keys_fault = key is not None and TABLE[failure.kind].key_scoped
        note = step.note
        if wrote:
            note = _joined(note, "after text was written: the next attempt restarts it")
        if keys_fault and turn.spare:
            note = _joined(note, f"next: its key {turn.spare[0].variable}")
        elif turn.probe and step.outcome is not Outcome.RETRY:
            note = _joined(note, "the probe after its cooldown failed")
        self.record.failure(
            turn, failure, step.outcome, elapsed, step.wait, note, reply=ending.reply
        )
        if step.outcome is Outcome.RETRY:
            self.seams.sleeper.sleep(step.wait)
            turn.retries += 1
            return True
        if keys_fault:
            self.turns.cool(turn, failure, step.cooldown, key=key)
            if self.turns.next_key(turn):
                return True
        else:
            self.turns.cool(turn, failure, step.cooldown)
        if ending.reply is not None and ending.reply.text.strip() and self.kept is None:
            # Cut short: not an answer while a better one may come, but better than none.
            self.kept = (d, ending.reply, failure)
        if failure.kind is not ErrorKind.CONTEXT_WINDOW:
            reason = Reason.FAILED_FOR_NOW if step.transient else Reason.FAILED
            self.verdicts[d.name] = Verdict(reason, failure.detail, failure.kind)
            return False
        self.verdicts[d.name] = Verdict(Reason.OVERFLOWED, failure.detail, failure.kind)
        self.queue, dropped = after_overflow(self.config, d, self.queue, self.verdicts)
        for other, why in dropped:
            self._pass_over(other, Verdict(Reason.TOO_SMALL, why))
        return False

    def _answered(self, turn: DeploymentTurn, reply: Reply, elapsed: float) -> Result:
        """The question's end with an answer: its row, the deployment cleared (it is
        healthy), the result."""
        usage = self.record.reply(turn, reply, elapsed)
        self.turns.clear(turn)
        return self.results.answered(turn.deployment, reply, usage)

    def _finish(self, turn: DeploymentTurn, ending: Ending, elapsed: float) -> Result:
        """Record the attempt that ended the question, write back what it proved, and the
        question's result."""
        usage = self.record.ending(turn, ending, elapsed)
        if isinstance(ending, Answered) or (isinstance(ending, Refused) and ending.reply):
            self.turns.clear(turn)  # a reply, even a refusal: the deployment is healthy
        elif isinstance(ending, Stopped):
            self.turns.cool(turn, ending.failure, ending.cooldown)
        return self.results.ended(turn.deployment, ending, usage)
