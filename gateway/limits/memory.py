"""Allowances for one process only: tests, and a process on its own share of each limit
when the shared store is out of reach."""

from __future__ import annotations

import threading

from gateway.limits.local import Change, Ledger, LocalAllowance


class MemoryAllowance(LocalAllowance):
    def __init__(self, *, alone: bool = False) -> None:
        super().__init__(alone=alone)
        self._ledger = Ledger()
        self._lock = threading.Lock()  # `batch` draws from several threads at once

    def _load(self) -> Ledger:
        return self._ledger

    def _update(self, change: Change) -> Ledger:
        with self._lock:
            self._ledger = change(self._ledger) or self._ledger
            return self._ledger
