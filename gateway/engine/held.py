"""Cooldowns this process took, seen by every question of the engine before each call.

The state store is read once when a question starts (a file read, or a round trip to a
shared server), which is right for one question per process. In a process asking many
at once (`support-ask batch`), a deployment one question cools must not be called by
another a moment later, whether that one is starting or about to retry: the engine
records every cooldown it takes here too, and looks here, in memory and under a lock,
before every call. A success clears the deployment here as in the store.

Records are named as in the store (a deployment's name). A cooldown bound to a key
value (an auth failure) holds only calls made with that value, as in the store.
"""

from __future__ import annotations

import threading

from gateway.model import Cooldown
from gateway.record import record
from gateway.secrets.key import Secret


@record
class _Held:
    cooldown: Cooldown
    key: Secret | None  # the key it is bound to; None: every call to the deployment


class HeldDeployments:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def hold(self, cooldown: Cooldown, key: Secret | None = None) -> None:
        """Record a cooldown; like the store, a shorter one never shortens a longer one
        bound to the same key."""
        with self._lock:
            old = self._held.get(cooldown.name)
            if old is None or old.key != key or old.cooldown.until < cooldown.until:
                self._held[cooldown.name] = _Held(cooldown, key)

    def empty(self) -> bool:
        """Whether nothing is held (read without the lock: a dict's size is read whole)."""
        return not self._held

    def release(self, name: str) -> bool:
        """Forget `name` (a success proved it well); whether it was held."""
        if not self._held:
            return False  # the common case, without the lock, as in `holding`
        with self._lock:
            return self._held.pop(name, None) is not None

    def holding(self, name: str, key: Secret | None, now: float) -> Cooldown | None:
        """The cooldown keeping a call back at `now` (a call to the deployment or with the
        key the record `name` is for, made with `key`), if any."""
        if not self._held:
            return None  # the common case, without the lock: a dict's size is read whole
        with self._lock:
            held = self._held.get(name)
            if held is None:
                return None
            if held.cooldown.until <= now:
                del self._held[name]
                return None
            if held.key is not None and held.key != key:
                return None
            return held.cooldown
