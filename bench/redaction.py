"""7. What redacting every key from every output costs, each interleaved with its baseline.

- A streamed answer's first token through the CLI's wiring (every adapter behind the run's
  redactor, which holds back a tail that could begin a key) against the same engine and
  adapter with no redactor, over the loopback server in another process.
- The scrubber alone over a whole streamed answer (120 deltas) against a plain sink.
"""

from __future__ import annotations

from typing import Any

from bench.context import Context
from bench.inproc import (
    KEY,
    ServerProcess,
    _captured_body,
    _config,
    _engine,
    _request,
    first_token_s,
)
from bench.loopback import ANSWER, STREAM_GAP
from bench.stats import Measure, Row, Target, Unit, interleaved, paired

GROUP = "7 redaction"
# Keys in each provider's shape, as a run with four deployments would know them.
KEYS = (
    KEY,
    "sk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6pL0sD5gA8eW3tY6uI1oP4aS7dF0g",
    "sk-ant-api03-Qw8Er4Ty6Ui0Op2As4Df6Gh8Jk0Lz2Xc4Vb6Nm8-aBcDeF",
    "AIzaSyD4kz9Qx7Lm2Np5Rt8Vw1Yb3Cd6Ef9Gh0J",
    "0123456789abcdef0123456789abcdef",
)


def _first_token(ctx: Context) -> Row:
    import json

    from gateway.providers import build_provider
    from gateway.providers.redaction import RedactingProvider
    from gateway.secrets.redactor import Redactor

    request = _request()
    payload = json.loads(_captured_body(request))
    payload["stream"] = True
    redactor = Redactor(KEYS)
    with ServerProcess() as server:
        config = _config(server.base_url)
        kept: dict[str, Any] = {}

        def plain(deployment: Any, key: Any) -> Any:
            if "plain" not in kept:
                kept["plain"] = build_provider(deployment, key)
            return kept["plain"]

        def scrubbed(deployment: Any, key: Any) -> Any:
            if "scrubbed" not in kept:
                kept["scrubbed"] = RedactingProvider(build_provider(deployment, key), redactor)
            return kept["scrubbed"]

        with_redactor, without = _engine(config, scrubbed), _engine(config, plain)
        # Many rounds: one first token is ~2 ms of loopback I/O on a shared machine, and
        # the difference sought is a few microseconds.
        cand, base = interleaved(
            lambda: first_token_s(with_redactor, request),
            lambda: first_token_s(without, request),
            max(3, ctx.sizes.inproc_iterations // 20),
        )
        for adapter in kept.values():
            adapter.close()
    return Row(
        GROUP,
        f"streamed first token, 5 keys redacted (rest held back {STREAM_GAP * 1000:g} ms)",
        Unit.MICROS,
        cand,
        base,
        "the same engine and adapter, no redactor",
        Target.at_most(Measure.ADDED_MEDIAN, 100e-6, "<= 100 us added"),
    )


def _scrubber_alone(ctx: Context) -> Row:
    from gateway.secrets.redactor import Redactor, StreamScrubber

    redactor = Redactor(KEYS)
    words = (ANSWER + " ") * 12
    deltas = [words[i : i + 5] for i in range(0, 600, 5)]  # 120 deltas of a few characters
    out: list[str] = []

    def scrubbed() -> object:
        out.clear()
        stream = StreamScrubber(redactor, out.append)
        for delta in deltas:
            stream(delta)
        stream.flush()
        return out

    def plain() -> object:
        out.clear()
        for delta in deltas:
            out.append(delta)
        return out

    cand, base = paired(scrubbed, plain, ctx.sizes.engine_iterations // 10)
    return Row(
        GROUP,
        "stream scrubber, 120 deltas, 5 keys",
        Unit.MICROS,
        cand,
        base,
        "a plain sink",
        Target.at_most(Measure.ADDED_MEDIAN, 500e-6, "<= 500 us per answer"),
    )


def run(ctx: Context) -> list[Row]:
    return [_first_token(ctx), _scrubber_alone(ctx)]
