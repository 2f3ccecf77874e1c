"""Runs one question through the real engine in its own OS process, sharing a state file.

Used by the cross-process tests: `python -m tests.support.engine_driver STATE_FILE` asks one
question with the primary scripted to answer 429 three times and prints one JSON line:
the result plus how many calls each deployment received.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gateway.clock import FixedRandom, VirtualClock
from gateway.config import Config, Deployment, Policy
from gateway.engine.loop import Engine
from gateway.model import ErrorKind, ProviderKind, Request
from gateway.state.file import FileStore
from tests.support.fakes import ScriptedFactory, ScriptedProvider, answer, failure


def main(state: Path) -> None:
    policy = Policy()
    config = Config(
        "Acme",
        (
            Deployment("primary", ProviderKind.OPENAI, 128_000, policy, "m", "OPENAI_API_KEY"),
            Deployment(
                "fallback", ProviderKind.ANTHROPIC, 200_000, policy, "m", "ANTHROPIC_API_KEY"
            ),
        ),
    )
    clock = VirtualClock(start_wall=__import__("time").time())
    primary = ScriptedProvider("primary", [failure(ErrorKind.RATE_LIMIT)] * 3 + [answer("primary")])
    fallback = ScriptedProvider("fallback", [answer("fallback text")])
    engine = Engine(
        config,
        providers=ScriptedFactory([primary, fallback]),
        store=FileStore(state),
        clock=clock,
        sleeper=clock,
        rng=FixedRandom(0.5),
        environ={"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"},
        count_tokens=len,
    )
    result = engine.ask(Request("system", "How do I reset my password?", 400))
    out = result.as_json()
    out["calls"] = {"primary": primary.calls, "fallback": fallback.calls}
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
