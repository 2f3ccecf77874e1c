"""Cooldowns for one process only: tests, `eval`, and `simulate` without --state."""

from __future__ import annotations

from collections.abc import Collection

from gateway.state import rules
from gateway.state.local import Change, LocalStore
from gateway.state.records import DEFAULT_BOUNDS, State, StateBounds


class MemoryStore(LocalStore):
    """Cooldowns for one process only: tests, `eval`, and `simulate` without --state."""

    def __init__(
        self, *, limits: StateBounds = DEFAULT_BOUNDS, known: Collection[str] | None = None
    ):
        super().__init__(limits=limits, known=known)
        self._state = State(rules.new_salt(), {})

    def _load(self) -> State:
        return self._state

    def _update(self, change: Change) -> State:
        self._state = change(self._state) or self._state
        return self._state
