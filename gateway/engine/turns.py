"""Whose turn it is: which deployment may be called now and with which of its keys, the one
probe after a cooldown, and what the question writes back to the shared state.

The state is read once, when the question starts; the cooldowns other questions of this
process took since are looked up before every call (`held`). A deployment whose cooldown
ended is probed once in the whole fleet, under a short lease, and so is a pair
(deployment, key): an invocation that loses a pair's lease goes on with the next key.
What the question learns is written back here: a failure cools the deployment or the
pair (`gateway.engine.table` says whose it is), a reply clears both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from gateway.config import Config, Deployment
from gateway.engine import credentials
from gateway.engine.credentials import Key, Keys
from gateway.engine.held import HeldDeployments
from gateway.engine.policy import cooldown_basis
from gateway.engine.results import Reason, Verdict
from gateway.limits.records import Grant
from gateway.model import Cooldown, Failure
from gateway.record import record
from gateway.seams import Clock, Provider, StateStore
from gateway.secrets.key import Secret
from gateway.state.records import Snapshot

log = logging.getLogger("support_ask.engine")

_PROBED_ELSEWHERE = "its cooldown ended; another invocation is sending the one probe"


class DeploymentTurn:
    """One deployment being called: its adapter, when its time ends, its calls so far."""

    __slots__ = (
        "began",
        "calls",
        "deployment",
        "grant",
        "key",
        "probe",
        "provider",
        "retries",
        "spare",
        "until",
    )

    def __init__(
        self,
        deployment: Deployment,
        key: Key | None,  # None: a deployment that takes no key
        spare: list[Key],  # its other keys, tried at once when this one fails for its own sake
        provider: Provider,
        began: float,  # on the monotonic clock
        until: float,  # the earlier of its own budget's deadline and the question's
        probe: bool = False,  # the one call after its cooldown ended, under the fleet's lease
    ) -> None:
        self.deployment = deployment
        self.key = key
        self.spare = spare
        self.provider = provider
        self.began = began
        self.until = until
        self.probe = probe
        self.calls = 0
        self.retries = 0
        self.grant: Grant | None = None  # its place in the fleet's shared limits, until settled


@record
class TurnSeams:
    """What every question's turns are given by the engine (the same for each of its
    questions, so built once with it)."""

    store: StateStore
    held: HeldDeployments
    clock: Clock
    provider_for: Callable[[Deployment, Secret | None], Provider]
    rotating: tuple[str, ...] = ()  # the deployments that keep a round-robin cursor


class Turns:
    """One question's view of the shared state, and what it writes back."""

    seen: Snapshot  # the shared state, read once when the question starts (`read`)

    def __init__(
        self,
        config: Config,
        deadline: float,
        seams: TurnSeams,
        keys_for: Callable[[Deployment], Keys],
    ) -> None:
        """`deadline`: the question's budget's end, on the monotonic clock; `keys_for`: each
        deployment's keys as this question read them."""
        self.config = config
        self.deadline = deadline
        self.store = seams.store
        self.held = seams.held
        self.clock = seams.clock
        self.provider_for = seams.provider_for
        self.rotating = seams.rotating
        self.keys_for = keys_for
        self.probes: set[str] = set()  # records this question holds the probe lease of

    def read(self, current_keys: Mapping[str, Secret | None]) -> None:
        """Read the shared state, moving every round-robin cursor on by one."""
        self.seen = self.store.read(self.clock.wall(), current_keys, advance=self.rotating)

    # -- before a turn --------------------------------------------------------------------

    def barrier(self, d: Deployment) -> Verdict | None:
        """Why `d` cannot be called now, going by its keys, the state and the budget (None:
        it can). Records nothing and takes no lease."""
        return self._barrier(d, self.keys_for(d), self.clock.monotonic())[0]

    def begin(self, d: Deployment) -> DeploymentTurn | Verdict:
        """`d`'s turn when nothing bars it (`barrier`), else why not: its probe lease when
        its cooldown ended, and its keys in the order this question tries them (the first
        is used; the others wait for a failure that is the key's). A verdict also when the
        deployment's probe, or every key's, went to another invocation."""
        keys = self.keys_for(d)
        verdict, spare = self._barrier(d, keys, self.clock.monotonic())
        if verdict is not None:
            return verdict
        if d.name in self.seen.due and not d.provider.offline:
            if not self._lease(d.name, d):
                return Verdict(Reason.COOLING, _PROBED_ELSEWHERE)
            log.info("%s: its cooldown ended; this invocation sends the one probe", d.name)
        key = self._take_key(d, spare)
        if spare == [] and key is None and keys.usable:
            return Verdict(Reason.COOLING, _PROBED_ELSEWHERE)
        provider = self.provider_for(d, None if key is None else key.secret)
        # From when its adapter is ready: building one (a first connection's set-up) is
        # the deployment's time, which its first call is checked against.
        began = self.clock.monotonic()
        until = min(self.deadline, began + d.policy.budget)  # the earlier deadline
        return DeploymentTurn(d, key, spare, provider, began, until, self._probing(d, key))

    def _barrier(self, d: Deployment, keys: Keys, now: float) -> tuple[Verdict | None, list[Key]]:
        """`barrier` at monotonic time `now`, and `d`'s usable keys that nothing holds back,
        in this question's order (what its turn would take them in)."""
        if keys.problem is not None:
            return Verdict(Reason.NO_KEY, keys.problem), []
        cooldown = self.seen.cooling.get(d.name)
        if cooldown is not None:
            left = cooldown.until - self.clock.wall()
            detail = f"cooling down for {left:.0f} s after {cooldown.kind}"
            return Verdict(Reason.COOLING, detail), []
        ordered = self._keys(d, keys) if keys.usable else []
        if keys.usable and not ordered:
            each = [why for k in keys.usable if (why := self._key_held(k)) is not None]
            detail = "every key is cooling down: " + (", ".join(each) or "held back")
            return Verdict(Reason.COOLING, detail), ordered
        if d.name in self.seen.due and d.name in self.seen.probing:
            # Its cooldown is over and another invocation is probing it: still held back.
            return Verdict(Reason.COOLING, _PROBED_ELSEWHERE), ordered
        # An offline deployment answers in milliseconds, inside the budget's margin: with
        # the budget spent it is still the customer's best chance of an answer.
        if self.deadline <= now and not d.provider.offline:
            return Verdict(Reason.OUT_OF_TIME, "no time left in the budget"), ordered
        return None, ordered

    # -- during a turn --------------------------------------------------------------------

    def held_back(self, turn: DeploymentTurn) -> Verdict | None:
        """Why `turn` must not call now, going by the cooldowns this process took since the
        question started (None: it may). A held key gives way to the next one at once."""
        if self.held.empty():
            return None  # the common case: no question of this process cooled anything
        d, now = turn.deployment, self.clock.wall()
        cooldown = self.held.holding(d.name, None, now)
        while cooldown is None and turn.key is not None:
            cooldown = self.held.holding(turn.key.record, turn.key.secret, now)
            if cooldown is None or not self.next_key(turn):
                break
            cooldown = None
        if cooldown is None:
            return None
        left = cooldown.until - now
        why = f"cooling down for {left:.0f} s after {cooldown.kind}"
        return Verdict(Reason.HELD, f"{why} (cooled by another question meanwhile)")

    def next_key(self, turn: DeploymentTurn) -> bool:
        """Go on with the deployment's next key: a fresh adapter, a fresh count of retries.
        False when it has no other key it may be called with."""
        key = self._take_key(turn.deployment, turn.spare)
        if key is None:
            return False
        turn.key = key
        turn.provider = self.provider_for(turn.deployment, key.secret)
        turn.retries = 0
        turn.probe = self._probing(turn.deployment, key)
        return True

    # -- what the question writes back ----------------------------------------------------

    def cool(
        self,
        turn: DeploymentTurn,
        failure: Failure,
        cooldown: float | None,
        *,
        key: Key | None = None,
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
        self.held.hold(Cooldown(name, d.name, until, failure.kind, now), credential)
        self.store.cool(
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

    def clear(self, turn: DeploymentTurn) -> None:
        """A reply clears what it proves wrong: the deployment's record and its key's; with
        nothing recorded, nothing is written. One another question of this engine took
        since this one read the store is cleared too: this process knows it is there."""
        if not self.seen.present and self.held.empty():
            return  # the common case: nothing recorded, nothing held, nothing to clear
        for name in (turn.deployment.name, None if turn.key is None else turn.key.record):
            if name is not None:
                held = self.held.release(name)
                if held or name in self.seen.present:
                    self.store.clear(name)

    # -- keys and leases ------------------------------------------------------------------

    def _keys(self, d: Deployment, keys: Keys) -> list[Key]:
        """`d`'s usable `keys` that nothing holds back, in this question's order."""
        usable = keys.usable
        if d.name in self.rotating:
            ordered = credentials.in_turn(usable, d, self.seen.cursors.get(d.name, 0))
        else:
            ordered = list(usable)  # as configured: only a rotating deployment keeps a cursor
        if not (self.seen.cooling or self.seen.due) and self.held.empty():
            return ordered  # the common case: nothing read or held, so no key is held back
        return [k for k in ordered if self._key_held(k) is None]

    def _key_held(self, key: Key) -> str | None:
        """Why the pair (deployment, `key`) must not be called now, in a few words (None:
        it may): cooling down (as read, or cooled by another question of this process
        since), or its cooldown ended and another invocation is sending the probe."""
        now = self.clock.wall()
        cooldown = self.seen.cooling.get(key.record) or self.held.holding(
            key.record, key.secret, now
        )
        if cooldown is not None:
            return f"{key.variable} for {cooldown.until - now:.0f} s after {cooldown.kind}"
        if key.record in self.seen.due and key.record in self.seen.probing:
            return f"{key.variable}: another invocation is sending the one probe"
        return None

    def _take_key(self, d: Deployment, candidates: list[Key]) -> Key | None:
        """The next of `candidates` this question may call `d` with, taken off the list. A
        pair whose cooldown ended is probed by one invocation of the fleet, under the
        lease deployments' probes use: one that loses the lease goes on with the next key."""
        while candidates:
            key = candidates.pop(0)
            if key.record not in self.seen.due:
                return key
            if self._lease(key.record, d):
                log.info(
                    "%s: the cooldown of its key %s ended; this invocation sends the one probe",
                    d.name,
                    key.variable,
                )
                return key
        return None

    def _lease(self, name: str, d: Deployment) -> bool:
        """Take the fleet's probe lease of record `name`, as long as the probe's longest
        call and a little more; whether this question got it."""
        if not self.store.lease(name, now=self.clock.wall(), ttl=d.policy.timeout + 1.0):
            return False
        self.probes.add(name)
        return True

    def _probing(self, d: Deployment, key: Key | None) -> bool:
        """Whether a call to `d` with `key` is the one probe after a cooldown (of the
        deployment, or of this pair)."""
        return d.name in self.probes or (key is not None and key.record in self.probes)
