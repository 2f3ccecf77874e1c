"""The fallback engine: one loop that calls, records, sleeps and moves on.

Every decision comes from `gateway.engine.policy`; this module only carries them out against the
seams it is given (providers, state store, clock, sleeper, random source), so a test can
drive a whole question, waits and all, in microseconds. Each attempt ends in a value
(`policy.Ending`: answered, refused, stopped, fatal, or failed with the next step) and the
loop in `_Question.run` is the one place that acts on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from gateway.config import Config, Deployment
from gateway.engine import credentials
from gateway.engine.backoff import Budget
from gateway.engine.credentials import Key, Keys
from gateway.engine.held import HeldDeployments
from gateway.engine.policy import (
    Answered,
    Ending,
    Failed,
    Fatal,
    Refused,
    Stopped,
    after_overflow,
    cooldown_basis,
    judge,
    plan_route,
    window_shortfall,
)
from gateway.engine.table import TABLE
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
    Refusal,
    RefusedBy,
    Reply,
    Request,
    RestartSink,
    Result,
    Status,
    TextSink,
    Usage,
)
from gateway.seams import (
    Clock,
    Compactor,
    Provider,
    ProviderFactory,
    RandomSource,
    Sleeper,
    StateStore,
)
from gateway.secrets.key import Secret
from gateway.state.records import Snapshot

log = logging.getLogger("support_ask.engine")


@dataclass(frozen=True)
class _Verdict:
    """How one deployment ended when it did not answer."""

    last_error: str
    transient: bool = False  # could clear by itself: cooling down, rate-limited, out of time
    # Which of those it was, so "retry later" says what happened and nothing else.
    cooling: bool = False  # skipped: cooling down from an earlier question
    out_of_time: bool = False  # the budget ran out before (or while) it could be called
    kind: ErrorKind | None = None  # what its last call failed with
    unconfigured: bool = False  # skipped because its key is not set
    too_small: bool = False  # its window cannot hold the input
    rejected_input: Deployment | None = None  # it reported a context overflow


@dataclass(frozen=True)
class _Seams:
    """What one question is given by the engine that asks it; it reaches for nothing else."""

    store: StateStore
    clock: Clock
    sleeper: Sleeper
    rng: RandomSource
    count_tokens: Callable[[str], int]
    on_attempt: Callable[[Attempt], None] | None
    keys_for: Callable[[Deployment], Keys]
    current_keys: Callable[[], Mapping[str, Secret | None]]
    provider_for: Callable[[Deployment, Secret | None], Provider]
    held: HeldDeployments


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
        # One adapter per deployment, key and thread for the engine's life: a kept-alive
        # connection is most of what a second question to the same provider saves, and an
        # adapter holds one connection, so questions asked at once on several threads
        # (`support-ask batch`) each get their own.
        self._adapters: dict[tuple[str, Secret | None, int], Provider] = {}
        self._adapters_lock = threading.Lock()
        self._held = HeldDeployments()

    def provider_for(self, deployment: Deployment, key: Secret | None) -> Provider:
        slot = (deployment.name, key, threading.get_ident())
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
    ) -> Result:
        """Answer one question through the deployments; never raises for a provider's fault.

        `started` is when the question began on the clock's monotonic time (the CLI passes
        its process start, so work done before the engine, like reading the articles, is
        spent from the same budget); by default, now. With `on_restart`, a stream that
        breaks after text is retried or failed over like any failure, and `on_restart` is
        told just before the next attempt's first text; without it, such a stream stops
        the question (the text cannot be taken back). With `compact`, a deployment whose
        window cannot hold the request, or that reports an overflow, is sent a smaller one
        built to fit it, rather than passed over."""
        seams = _Seams(
            store=self._store,
            clock=self._clock,
            sleeper=self._sleeper,
            rng=self._rng,
            count_tokens=self._count_tokens,
            on_attempt=self._on_attempt,
            keys_for=self.keys_for,
            current_keys=lambda: credentials.current(self.config, self._environ),
            provider_for=self.provider_for,
            held=self._held,
        )
        # Every wait and call of this question is measured from its start.
        start = self._clock.monotonic() if started is None else started
        budget = Budget(start, self.config.policy.budget)
        question = _Question(self.config, request, seams, budget, on_text, exact_tokens, compact)
        question.on_restart = on_restart
        return question.run()

    def keys_for(self, deployment: Deployment) -> Keys:
        """The deployment's usable keys, and why the others cannot be used: a variable not
        set, or holding what cannot be a key (never sent, so never echoed, never cooled)."""
        return credentials.keys_for(deployment, self._environ)


@dataclass
class _Turn:
    """One deployment being called: its adapter, its own budget, its calls so far."""

    deployment: Deployment
    key: Key | None  # None: a deployment that takes no key
    spare: list[Key]  # its other keys, tried at once when this one fails for its own sake
    provider: Provider
    budget: Budget
    probe: bool = False  # the one call after its cooldown ended, under the fleet's lease
    calls: int = 0
    retries: int = 0


_PROBED_ELSEWHERE = "its cooldown ended; another invocation is sending the one probe"
_SHRUNK = "sent again with fewer passages"


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


class _Question:
    """The state of one question: its budget, its attempts, each deployment's last word."""

    def __init__(
        self,
        config: Config,
        request: Request,
        seams: _Seams,
        budget: Budget,
        on_text: TextSink | None,
        exact_tokens: bool,
        compact: Compactor | None = None,
    ) -> None:
        self.config = config
        self.request = request
        self.compact = compact
        # Input limits (a window less the reply) -> the request built to fit, and its
        # exact token count; None when nothing fits. Built once per limit.
        self.fitted: dict[int, tuple[Request, int] | None] = {}
        self.limits: dict[str, int] = {}  # deployment -> its limit after it overflowed
        self.shrunk: dict[str, int] = {}  # deployment -> overflows it answered with less
        self.seams = seams
        self.clock = seams.clock
        self.budget = budget
        self.on_text = on_text
        self.attempts: list[Attempt] = []
        self.verdicts: dict[str, _Verdict] = {}
        tokens, self.tokens_exact = self._input_tokens(exact_tokens)
        self.plan = plan_route(self.config, tokens)
        self.queue = list(self.plan.candidates)  # the deployments not taken up yet
        # The first cut-short reply: returned, marked incomplete, if nothing better comes.
        self.kept: tuple[Deployment, Reply, Failure] | None = None
        self.on_restart: RestartSink | None = None
        # With restarts: the broken attempt whose text is still on the customer's screen
        # (the restart is said only when another attempt has text to replace it).
        self.shown: tuple[Deployment, str, Failure] | None = None
        self.seen = Snapshot({})  # the shared state, read once when the loop starts
        self.probes: set[str] = set()  # deployments this question holds the probe lease of

    # -- set-up ---------------------------------------------------------------------------

    def _input_tokens(self, exact: bool) -> tuple[int, bool]:
        text = self.request.text
        # Every cl100k token is at least one byte, so the UTF-8 length bounds the count from
        # above. When even that bound fits every window, the exact count cannot change a
        # routing decision and loading the tokenizer (the slowest part of start-up) is skipped.
        bound = len(text.encode("utf-8"))
        smallest = min(d.context_window for d in self.config.all_deployments())
        if exact or bound + self.config.max_output_tokens > smallest:
            return self.seams.count_tokens(text), True
        return bound, False

    def _request_for(self, d: Deployment) -> Request:
        """What deployment `d` is asked: the request, or one compacted to fit its window."""
        fitted = self._fitted_for(d)
        return self.request if fitted is None else fitted[0]

    def _fitted_for(self, d: Deployment) -> tuple[Request, int] | None:
        """The compacted request `d` is sent and its tokens; None: the request as it is."""
        if d.provider.offline or self.compact is None:
            return None  # the offline ranker needs no window: it gets everything
        limit = self.limits.get(d.name)
        if limit is None:
            if window_shortfall(self.config, self.plan.input_tokens, d) is None:
                return None
            limit = d.context_window - self.config.max_output_tokens
        return self._fit(limit)

    def _fit(self, limit: int) -> tuple[Request, int] | None:
        """A request whose input is at most `limit` tokens, counted exactly (the builder
        only estimates: when it misses, it is asked again for proportionally less)."""
        if limit in self.fitted:
            return self.fitted[limit]
        assert self.compact is not None
        found: tuple[Request, int] | None = None
        target = limit
        for _ in range(4):
            request = self.compact.within(target) if target > 0 else None
            if request is None:
                break
            tokens = self.seams.count_tokens(request.text)
            if tokens <= limit:
                found = (request, tokens)
                break
            target = int(target * limit / tokens * 0.9)
        self.fitted[limit] = found
        return found

    def _shrink(self, d: Deployment) -> bool:
        """After `d` reported that the input overflowed its window: send it less (two
        thirds of what overflowed: its tokenizer counts more than ours), at most twice.
        False when there is nothing smaller to send."""
        if self.compact is None or d.provider.offline:
            return False
        self.shrunk[d.name] = self.shrunk.get(d.name, 0) + 1
        if self.shrunk[d.name] > 2:
            return False
        fitted = self._fitted_for(d)
        sent = self._exact_input() if fitted is None else fitted[1]
        limit = sent * 2 // 3
        smaller = self._fit(limit)
        if smaller is None or smaller[1] >= sent:
            return False
        self.limits[d.name] = limit
        return True

    def _exact_input(self) -> int:
        if self.tokens_exact:
            return self.plan.input_tokens
        return self.seams.count_tokens(self.request.text)

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Result:
        """One loop: take the next deployment, call it, and act on how the call ended."""
        rotating = [d.name for d in self.config.all_deployments() if credentials.rotates(d)]
        self.seen = self.seams.store.read(
            self.clock.wall(), self.seams.current_keys(), advance=rotating
        )
        queue = self.queue
        turn: _Turn | None = None
        while True:
            if turn is None:
                if not queue:
                    return self._failed()
                d = queue.pop(0)
                barrier = self._barrier(d) or self._claim_probe(d)
                if barrier is not None:
                    self._record_skip(d, barrier.last_error)
                    self.verdicts[d.name] = barrier
                else:
                    begun = self._begin(d)
                    if isinstance(begun, _Verdict):
                        self._record_skip(d, begun.last_error)
                        self.verdicts[d.name] = begun
                    else:
                        turn = begun
                continue
            d = turn.deployment
            now = self.clock.monotonic()
            if self._left(turn, now) <= 0 and not d.provider.offline:
                verdict = _Verdict("no time left in the budget", transient=True, out_of_time=True)
                if turn.calls == 0:
                    # The budget ran out while its turn began: still a row, so every
                    # deployment the question reached shows in the table and the log.
                    self._record_skip(d, verdict.last_error)
                self.verdicts[d.name] = verdict
                turn = None
                continue
            # Another question of this engine may have cooled it (or its key) since this
            # one looked: not called again, whatever this question knew.
            held = self._held_back(turn)
            if held is not None:
                self._record_skip(d, held.last_error)
                self.verdicts[d.name] = held
                turn = None
                continue
            ending, elapsed, wrote = self._attempt(turn)
            if not isinstance(ending, Failed):
                return self._finish(turn, ending, elapsed)
            step = ending.step
            if ending.failure.kind is ErrorKind.CONTEXT_WINDOW and self._shrink(d):
                # The same deployment again at once, with fewer passages: nothing is wrong
                # with it, and a larger window elsewhere may cost more or not exist.
                self._record_failure(
                    turn, turn.calls, ending.failure, Outcome.RETRY, elapsed, 0.0, _SHRUNK
                )
                continue
            # A failure that is the key's (bad key, quota, its rate limit) cools that key for
            # this deployment alone (another naming the same variable is still tried with
            # it), and the deployment's next key is tried at once; any other failure cools
            # the deployment.
            keys_fault = (
                step.outcome is Outcome.FAIL_OVER
                and turn.key is not None
                and TABLE[ending.failure.kind].key_scoped
            )
            note = step.note
            if wrote:
                note = _joined(note, "after text was written: the next attempt restarts it")
            if keys_fault and turn.spare:
                note = _joined(note, f"next: its key {turn.spare[0].variable}")
            elif turn.probe and step.outcome is not Outcome.RETRY:
                note = _joined(note, "the probe after its cooldown failed")
            self._record_failure(
                turn,
                turn.calls,
                ending.failure,
                step.outcome,
                elapsed,
                step.wait,
                note,
                reply=ending.reply,
            )
            if step.outcome is Outcome.RETRY:
                self.seams.sleeper.sleep(step.wait)
                turn.retries += 1
                continue
            if keys_fault and turn.key is not None:
                self._cool(turn, ending.failure, step.cooldown, key=turn.key)
                if self._next_key(turn):
                    continue
            else:
                self._cool(turn, ending.failure, step.cooldown)
            if ending.reply is not None and ending.reply.text.strip() and self.kept is None:
                # Cut short: not an answer while a better one may come, but better than none.
                self.kept = (d, ending.reply, ending.failure)
            overflow = ending.failure.kind is ErrorKind.CONTEXT_WINDOW
            self.verdicts[d.name] = _Verdict(
                ending.failure.detail,
                transient=step.transient,
                kind=ending.failure.kind,
                rejected_input=d if overflow else None,
            )
            if overflow:
                queue, dropped = after_overflow(self.config, d, queue, self.verdicts)
                self.queue = queue
                for other, why in dropped:
                    self._record_skip(other, why)
                    self.verdicts[other.name] = _Verdict(why, too_small=True)
            turn = None

    def _begin(self, d: Deployment) -> _Turn | _Verdict:
        """Start calling `d`: its keys, in the order this question tries them, are chosen
        here (the first is used; the others wait for a failure that is the key's). A
        verdict instead when every key's probe went to another invocation meanwhile."""
        spare = self._keys(d)
        key = self._take_key(d, spare)
        if spare == [] and key is None and self.seams.keys_for(d).usable:
            return _Verdict(_PROBED_ELSEWHERE, transient=True, cooling=True)
        provider = self.seams.provider_for(d, None if key is None else key.secret)
        budget = Budget(self.clock.monotonic(), d.policy.budget)
        return _Turn(d, key, spare, provider, budget, probe=self._probing(d, key))

    def _probing(self, d: Deployment, key: Key | None) -> bool:
        """Whether a call to `d` with `key` is the one probe after a cooldown (of the
        deployment, or of this pair)."""
        return d.name in self.probes or (key is not None and key.record in self.probes)

    def _take_key(self, d: Deployment, candidates: list[Key]) -> Key | None:
        """The next of `candidates` this question may call `d` with, taken off the list. A
        pair whose cooldown ended is probed by one invocation of the fleet, under the
        lease deployments' probes use: one that loses the lease goes on with the next key."""
        while candidates:
            key = candidates.pop(0)
            if key.record not in self.seen.due:
                return key
            lease = d.policy.timeout + 1.0  # the probe's longest call, and a little more
            if self.seams.store.lease(key.record, now=self.clock.wall(), ttl=lease):
                self.probes.add(key.record)
                log.info(
                    "%s: the cooldown of its key %s ended; this invocation sends the one probe",
                    d.name,
                    key.variable,
                )
                return key
        return None

    def _held_back(self, turn: _Turn) -> _Verdict | None:
        """Why `turn` must not call now, going by the cooldowns this process took since the
        question started (None: it may). A held key gives way to the next one at once."""
        held = self.seams.held
        d, now = turn.deployment, self.clock.wall()
        cooldown = held.holding(d.name, None, now)
        while cooldown is None and turn.key is not None:
            cooldown = held.holding(turn.key.record, turn.key.secret, now)
            if cooldown is None or not self._next_key(turn):
                break
            cooldown = None
        if cooldown is None:
            return None
        left = cooldown.until - now
        why = f"cooling down for {left:.0f} s after {cooldown.kind}"
        return _Verdict(f"{why} (cooled by another question meanwhile)", transient=True)

    def _next_key(self, turn: _Turn) -> bool:
        """Go on with the deployment's next key: a fresh adapter, a fresh count of retries.
        False when it has no other key it may be called with."""
        key = self._take_key(turn.deployment, turn.spare)
        if key is None:
            return False
        turn.key = key
        turn.provider = self.seams.provider_for(turn.deployment, key.secret)
        turn.retries = 0
        turn.probe = self._probing(turn.deployment, key)
        return True

    def _keys(self, d: Deployment) -> list[Key]:
        """`d`'s usable keys that nothing holds back, in this question's order."""
        usable = self.seams.keys_for(d).usable
        ordered = credentials.in_turn(usable, d, self.seen.cursors.get(d.name, 0))
        return [k for k in ordered if self._key_held(k) is None]

    def _key_held(self, key: Key) -> str | None:
        """Why the pair (deployment, `key`) must not be called now, in a few words (None:
        it may): cooling down (as read, or cooled by another question of this process
        since), or its cooldown ended and another invocation is sending the probe."""
        now = self.clock.wall()
        cooldown = self.seen.cooling.get(key.record) or self.seams.held.holding(
            key.record, key.secret, now
        )
        if cooldown is not None:
            return f"{key.variable} for {cooldown.until - now:.0f} s after {cooldown.kind}"
        if key.record in self.seen.due and key.record in self.seen.probing:
            return f"{key.variable}: another invocation is sending the one probe"
        return None

    def _claim_probe(self, d: Deployment) -> _Verdict | None:
        """When `d`'s cooldown has ended, one call in the whole fleet probes it, under a
        short lease: this invocation takes it (None), or skips `d` while another has it."""
        if d.name not in self.seen.due or d.provider.offline:
            return None
        lease = d.policy.timeout + 1.0  # the probe's longest call, and a little more
        if self.seams.store.lease(d.name, now=self.clock.wall(), ttl=lease):
            self.probes.add(d.name)
            log.info("%s: its cooldown ended; this invocation sends the one probe", d.name)
            return None
        return _Verdict(_PROBED_ELSEWHERE, transient=True, cooling=True)

    def _left(self, turn: _Turn, now: float) -> float:
        return min(self.budget.left(now), turn.budget.left(now))

    def _attempt(self, turn: _Turn) -> tuple[Ending, float, bool]:
        """Call the deployment once: how the call ended, how long it took, whether it
        streamed text to the customer."""
        d = turn.deployment
        turn.calls += 1
        wrote = False

        def sink(text: str) -> None:
            nonlocal wrote
            assert self.on_text is not None
            if self.shown is not None and self.on_restart is not None:
                # This attempt's text replaces what a broken one left on the screen.
                broken, _, failure = self.shown
                self.shown = None
                self.on_restart(broken.name, failure.detail)
            wrote = True
            self.on_text(text)

        # The last deployment that can still be tried is never cut off for a slow start:
        # there is nothing faster to move on to.
        alternatives = any(self._barrier(other) is None for other in self.queue)
        started = self.clock.monotonic()
        partial = ""
        result: Reply | Failure
        try:
            result = turn.provider.complete(
                self._request_for(d),
                timeout=min(d.policy.timeout, self._left(turn, started)),
                on_text=sink if self.on_text is not None else None,
                first_token=d.policy.first_token_timeout if alternatives else None,
                stall=d.policy.stall_timeout,
            )
        except ProviderError as exc:
            result, partial = exc.failure, exc.partial
        now = self.clock.monotonic()
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

    def _barrier(self, d: Deployment) -> _Verdict | None:
        """Why `d` cannot be called now (None: it can). Records nothing."""
        # The offline ranker has no window to overflow; another deployment's is too small
        # only when not even a compacted request fits it.
        shortfall = window_shortfall(self.config, self.plan.input_tokens, d)
        if shortfall is not None and not d.provider.offline and self._fitted_for(d) is None:
            return _Verdict(shortfall, too_small=True)
        keys = self.seams.keys_for(d)
        if keys.problem is not None:
            return _Verdict(keys.problem, unconfigured=True)
        cooldown = self.seen.cooling.get(d.name)
        if cooldown is not None:
            left = cooldown.until - self.clock.wall()
            why = f"cooling down for {left:.0f} s after {cooldown.kind}"
            return _Verdict(why, transient=True, cooling=True)
        if keys.usable and not self._keys(d):
            return _Verdict(self._keys_cooling(keys), transient=True, cooling=True)
        if d.name in self.seen.due and d.name in self.seen.probing:
            # Its cooldown is over and another invocation is probing it: still held back.
            return _Verdict(_PROBED_ELSEWHERE, transient=True, cooling=True)
        # An offline deployment answers in milliseconds, inside the budget's margin: with
        # the budget spent it is still the customer's best chance of an answer.
        if self.budget.left(self.clock.monotonic()) <= 0 and not d.provider.offline:
            return _Verdict("no time left in the budget", transient=True, out_of_time=True)
        return None

    def _keys_cooling(self, keys: Keys) -> str:
        """Why none of `keys` may be called: each one is named, with what holds it back."""
        each = [why for k in keys.usable if (why := self._key_held(k)) is not None]
        return "every key is cooling down: " + (", ".join(each) or "held back")

    def _record_skip(self, d: Deployment, why: str) -> None:
        self._record(Attempt(d.name, 0, None, None, Outcome.SKIPPED, 0.0, 0.0, why))

    # -- endings --------------------------------------------------------------------------

    def _finish(self, turn: _Turn, ending: Ending, elapsed: float) -> Result:
        """Record the attempt that ended the question, and the question's result."""
        d, number = turn.deployment, turn.calls
        match ending:
            case Answered(reply=reply):
                self._record_reply(turn, number, reply, elapsed)
                return self._result(Status.ANSWERED, d, answer=reply.text, reply=reply)
            case Refused(text=text, by=by, reply=reply, failure=failure):
                if reply is not None:
                    self._record_reply(turn, number, reply, elapsed)
                else:
                    assert failure is not None
                    self._record_failure(turn, number, failure, Outcome.FATAL, elapsed)
                log.warning("%s: the %s refused the question: %s", d.name, by, text[:200])
                # The model's refusal is its answer, as is; the provider's filter wrote
                # none, and its explanation is no answer to show the customer.
                return self._result(
                    Status.REFUSED,
                    d,
                    answer=text if by is RefusedBy.MODEL else None,
                    reply=reply,
                    refusal=Refusal(by, text),
                )
            case Stopped(failure=failure, partial=partial, cooldown=cooldown, reply=reply):
                note = "after text was written: not retried"
                self._record_failure(
                    turn, number, failure, Outcome.STOPPED, elapsed, note=note, reply=reply
                )
                self._cool(turn, failure, cooldown)
                verb = "was cut short" if reply is not None else "broke off"
                error = QuestionError(
                    FailureKind.INCOMPLETE,
                    f"the answer from {d.name} {verb}: {failure.detail}",
                    (DeploymentError(d.name, failure.detail),),
                )
                return self._result(
                    Status.FAILED, d, answer=partial, reply=reply, error=error, incomplete=True
                )
            case Fatal(failure=failure):
                self._record_failure(turn, number, failure, Outcome.FATAL, elapsed)
                error = QuestionError(
                    FailureKind.BAD_REQUEST,
                    f"{d.name} rejected the request as malformed: {failure.detail}",
                    (DeploymentError(d.name, failure.detail),),
                )
                return self._result(Status.FATAL, d, error=error)
        raise AssertionError(f"not an ending of the question: {ending!r}")

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
        if self.seams.on_attempt is not None:
            self.seams.on_attempt(attempt)

    def _record_reply(self, turn: _Turn, number: int, reply: Reply, elapsed: float) -> None:
        # A refusal delivered as a reply is an answer too: the deployment is healthy.
        d = turn.deployment
        self._record(
            Attempt(
                d.name,
                number,
                None if d.provider.offline else 200,  # no HTTP status offline
                ErrorKind.REFUSAL if reply.refused else None,
                Outcome.FATAL if reply.refused else Outcome.ANSWERED,
                0.0,
                elapsed,
                "the probe after its cooldown answered: cleared" if turn.probe else "",
                None if turn.key is None else turn.key.variable,
                usage=Usage.of(reply),
                cost_usd=_cost(turn.deployment, reply),
            )
        )
        # A success clears what it proves wrong; with nothing recorded, nothing is written.
        # One another question of this engine took since this one read the store is
        # cleared too: this process knows it is there.
        for name in (d.name, None if turn.key is None else turn.key.record):
            if name is not None:
                held = self.seams.held.release(name)
                if held or name in self.seen.present:
                    self.seams.store.clear(name)

    def _cool(
        self, turn: _Turn, failure: Failure, cooldown: float | None, *, key: Key | None = None
    ) -> None:
        """Cool the deployment, or (`key`) one of its keys, bound to that key's value: a
        key that is replaced gets a new chance at once."""
        if cooldown is None:
            return
        d = turn.deployment
        now = self.clock.wall()
        name = d.name if key is None else key.record
        credential = None if key is None else key.secret
        # Every other question of this engine sees it before its next call.
        until = now + min(cooldown, d.policy.max_cooldown)
        self.seams.held.hold(Cooldown(name, d.name, until, failure.kind, now), credential)
        self.seams.store.cool(
            name,
            until=now + cooldown,
            kind=failure.kind,
            now=now,
            # What classifies the failure, never its text: that can echo the question.
            status=failure.status,
            code=failure.code,
            basis=cooldown_basis(failure, d.policy),
            deployment=d.name,
            credential=credential,
            cap=d.policy.max_cooldown,
        )

    def _record_failure(
        self,
        turn: _Turn,
        number: int,
        failure: Failure,
        outcome: Outcome,
        elapsed: float,
        wait: float = 0.0,
        note: str = "",
        reply: Reply | None = None,
    ) -> None:
        """`reply` is the reply that came but was no answer (cut short, empty)."""
        detail = f"{failure.detail} ({note})" if note else failure.detail
        key = None if turn.key is None else turn.key.variable
        self._record(
            Attempt(
                turn.deployment.name,
                number,
                failure.status,
                failure.kind,
                outcome,
                wait,
                elapsed,
                detail,
                key,
                usage=None if reply is None else Usage.of(reply),
                cost_usd=None if reply is None else _cost(turn.deployment, reply),
            )
        )

    def _result(
        self,
        status: Status,
        d: Deployment | None,
        *,
        answer: str | None = None,
        reply: Reply | None = None,
        error: QuestionError | None = None,
        incomplete: bool = False,
        refusal: Refusal | None = None,
    ) -> Result:
        """The question's result; `reply` is the one whose text is `answer`, if any."""
        model = None if reply is None else reply.model
        fitted = None if d is None else self._fitted_for(d)
        sent = self.request if fitted is None else fitted[0]
        return Result(
            status=status,
            answer=answer,
            deployment=None if d is None else d.name,
            provider=None if d is None else str(d.provider),
            model=model or (None if d is None else d.model),
            routed=self.plan.route,
            input_tokens=self.plan.input_tokens if fitted is None else fitted[1],
            input_tokens_exact=self.tokens_exact or fitted is not None,
            elapsed_s=self.clock.monotonic() - self.budget.start,
            attempts=tuple(self.attempts),
            error=error,
            incomplete=incomplete,
            finish_reason=None if reply is None else reply.finish_reason,
            refusal=refusal,
            usage=Usage() if reply is None else Usage.of(reply),
            articles=sent.sources,
            turns=len(sent.turns),
            turns_left_out=sent.turns_left_out,
            turn_tokens=sent.turn_tokens,
            language=sent.language,
        )

    def _failed(self) -> Result:
        verdicts = self.verdicts
        lines = tuple(DeploymentError(name, v.last_error) for name, v in verdicts.items())
        if self.shown is not None:
            # No restart came: what the customer reads is the broken attempt's text.
            d, text, failure = self.shown
            error = QuestionError(
                FailureKind.INCOMPLETE,
                f"the answer from {d.name} broke off ({failure.detail}) and no other "
                "attempt could answer",
                lines,
            )
            return self._result(Status.FAILED, d, answer=text, error=error, incomplete=True)
        if self.kept is not None:
            # Nothing better came: the cut-short answer, never passed off as a whole one.
            d, reply, failure = self.kept
            error = QuestionError(
                FailureKind.INCOMPLETE,
                f"the only answer, from {d.name}, was cut short: {failure.detail}",
                lines,
            )
            return self._result(
                Status.FAILED, d, answer=reply.text, reply=reply, error=error, incomplete=True
            )
        # Every deployment has a verdict by now (tried, skipped, or dropped after an
        # overflow, with its reason): "too large" is said only when each one says so.
        if verdicts and all(v.too_small or v.rejected_input for v in verdicts.values()):
            error = QuestionError(
                FailureKind.TOO_LARGE,
                f"the input ({self.plan.input_tokens:,} tokens) is too large for every "
                "deployment: each overflowed or has a smaller window",
                lines,
            )
            return self._result(Status.FATAL, None, error=error)
        transient = [v for v in verdicts.values() if v.transient]
        if transient and all(v.transient or v.unconfigured for v in verdicts.values()):
            error = QuestionError(FailureKind.UNAVAILABLE, _unavailable(verdicts), lines)
        else:
            error = QuestionError(FailureKind.EXHAUSTED, "no deployment could answer", lines)
        return self._result(Status.FAILED, None, error=error)


def _unavailable(verdicts: Mapping[str, _Verdict]) -> str:
    """Exit 75's one line, saying what happened to each deployment and no more: "cooling
    down" only for one that is, "no time left" only when the budget ran out."""

    def named(which: list[str], says: str) -> str:
        verb = "is" if len(which) == 1 else "are"
        return f"{', '.join(which)} {says.format(verb=verb)}"

    cooling = [name for name, v in verdicts.items() if v.cooling]
    failed = [(name, v.kind) for name, v in verdicts.items() if v.transient and v.kind]
    late = [name for name, v in verdicts.items() if v.out_of_time]
    unset = [name for name, v in verdicts.items() if v.unconfigured]
    parts = [
        *([named(cooling, "{verb} cooling down")] if cooling else []),
        *(f"{name} failed ({kind})" for name, kind in failed),
        *([named(late, "had no time left in the budget")] if late else []),
        *([named(unset, "cannot be called (no key)")] if unset else []),
    ]
    return "no deployment can answer for now: " + "; ".join(parts) + "; retry later"


def _cost(d: Deployment, reply: Reply) -> float | None:
    return None if d.price is None else d.price.cost_usd(reply.input_tokens, reply.output_tokens)
