"""The engine as the fleet tests build it: its calls drawing from a shared allowance, the
backoff's jitter fixed, tokens counted by characters, and one clock for both the time and
the sleeps (a `SystemClock` where threads race, a `VirtualClock` where none do)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.clock import FixedRandom, SystemClock, VirtualClock
from gateway.config import Config
from gateway.engine.loop import Engine
from gateway.seams import Allowance, ProviderFactory, StateStore
from gateway.state.memory import MemoryStore


def limited_engine(
    config: Config,
    allowance: Allowance,
    providers: ProviderFactory,
    *,
    clock: SystemClock | VirtualClock,
    environ: Mapping[str, str],
    store: StateStore | None = None,
) -> Engine:
    """An engine over `providers` whose calls take their place in `allowance`; cooldowns in
    `store` (a fresh in-memory one if None)."""
    return Engine(
        config,
        providers=providers,
        store=MemoryStore() if store is None else store,
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ=environ,
        count_tokens=len,
        allowance=allowance,
    )
