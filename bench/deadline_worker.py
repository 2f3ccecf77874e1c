"""One side of `bench.deadlines`' healthy-question comparison, in its own process.

`python bench/deadline_worker.py ROOT BASE_URL N MODE` puts ROOT (a checkout of
support-ask: this tree, or the commit before the deadlines) first on sys.path, asks N
questions in-process through the engine and the real OpenAI adapter (kept across
questions) against BASE_URL, and prints one JSON list: the seconds each question took.
MODE is `whole` or `stream`. Only APIs both trees share are used.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any


def main(root: str, base_url: str, n: int, mode: str) -> None:
    sys.path.insert(0, root)
    from gateway.clock import SystemClock
    from gateway.config import Config, Deployment

    try:
        from gateway.engine.loop import Engine
    except ImportError:  # a tree from before the engine had a package of its own
        from gateway.engine import Engine  # type: ignore[attr-defined,no-redef]
    from gateway.model import ProviderKind, Request
    from gateway.providers import build_provider

    store: Any
    try:
        from gateway.state.memory import MemoryStore

        store = MemoryStore()
    except ImportError:  # the tree before gateway/state/, which this tree's mypy cannot see
        store = importlib.import_module("gateway.cooldown").MemoryStore()

    loaded = sys.modules["gateway"].__file__ or ""
    if not loaded.startswith(root):
        raise SystemExit(f"imported gateway from {loaded}, not from {root}")
    primary = Deployment(
        "primary",
        ProviderKind.OPENAI,
        128_000,
        model="gpt-4o-mini",
        api_key_env="BENCH_OPENAI_API_KEY",
        base_url=base_url,
    )
    config = Config(product="Acme Cloud", deployments=(primary,))
    kept: dict[str, object] = {}

    def providers(deployment: Deployment, key: object) -> object:
        if deployment.name not in kept:
            kept[deployment.name] = build_provider(deployment, key)  # type: ignore[arg-type]
        return kept[deployment.name]

    clock = SystemClock()
    engine = Engine(
        config,
        providers=providers,  # type: ignore[arg-type]
        store=store,
        clock=clock,
        sleeper=clock,
        rng=clock,
        environ={"BENCH_OPENAI_API_KEY": "sk-bench-not-a-real-key"},
        count_tokens=len,
    )
    request = Request(
        system="You answer Acme Cloud support questions from these articles.\n" * 40,
        question="How do I reset my password?",
        max_output_tokens=400,
    )
    on_text = (lambda text: None) if mode == "stream" else None
    took: list[float] = []
    for i in range(n + max(5, n // 10)):  # the first few warm the connection and caches
        t0 = time.perf_counter()
        result = engine.ask(request, on_text=on_text)
        elapsed = time.perf_counter() - t0
        if result.answer is None or not result.answer.startswith("Open Settings"):
            raise SystemExit(f"the question went wrong: {result.as_json()}")
        if i >= max(5, n // 10):
            took.append(elapsed)
    engine.close()
    print(json.dumps(took))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
