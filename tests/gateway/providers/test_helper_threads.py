"""A helper thread the tool starts never takes a stop signal, and its starter's own mask
is as it was: a process-directed SIGINT, SIGTERM or SIGHUP can then only interrupt the
main thread (gateway.providers.deadline; tests/cli/test_contract.py sends them to a real
process)."""

from __future__ import annotations

import signal

from gateway.providers.deadline import STOPS, start_daemon


def blocked_here() -> set[int]:
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


def test_a_helper_thread_blocks_the_stop_signals_and_its_starter_keeps_its_mask() -> None:
    before = blocked_here()
    seen: list[set[int]] = []
    thread = start_daemon(lambda: seen.append(blocked_here()), "test-helper")
    thread.join(10)

    assert thread.daemon and thread.name == "test-helper"
    assert seen and seen[0] >= STOPS
    assert blocked_here() == before  # the stop signals still reach the starting thread
    assert not STOPS & before
