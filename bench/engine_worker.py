"""`python bench/engine_worker.py N`: ask the engine N questions over an in-memory provider
(the in-process benchmark's engine alone) with whichever tree `PYTHONPATH` names, and print
the median seconds per question over five rounds (0 when N is 0: the gate's callgrind run
subtracts a run of 0 from a run of N, so only the questions' own instructions remain)."""

from __future__ import annotations

import statistics
import sys
import time

from bench.inproc import _config, _engine, _InMemoryProvider, _request
from bench.loopback import ANSWER


def main() -> None:
    from gateway.model import Reply

    n = int(sys.argv[1])
    request = _request()
    provider = _InMemoryProvider(Reply(text=ANSWER, finish_reason="stop", model="gpt-4o-mini"))
    engine = _engine(_config("http://127.0.0.1:9/v1"), lambda deployment, key: provider)
    engine.ask(request)  # the first question builds what the engine keeps
    rounds = []
    for _ in range(5 if n else 0):
        t0 = time.perf_counter()
        for _ in range(n // 5 or 1):
            if engine.ask(request).answer != ANSWER:
                raise SystemExit("the engine did not answer")
        rounds.append((time.perf_counter() - t0) / (n // 5 or 1))
    print(statistics.median(rounds) if rounds else 0.0)


if __name__ == "__main__":
    main()
