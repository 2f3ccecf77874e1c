"""8. The SSE decoder on one large event, chunked as a network delivers it, against the same
bytes fed in one piece: linear decoding makes the two the same work."""

from __future__ import annotations

from bench.context import Context
from bench.stats import Measure, Row, Target, Unit, paired

GROUP = "8 SSE decoder"
EVENT_BYTES = 2 * 1024 * 1024
CHUNK = 4096


def run(ctx: Context) -> list[Row]:
    from gateway.providers.sse import SseDecoder

    raw = b"data: " + b"x" * EVENT_BYTES + b"\n\n"
    chunks = [raw[i : i + CHUNK] for i in range(0, len(raw), CHUNK)]

    def chunked() -> object:
        decoder = SseDecoder()
        events = [event for chunk in chunks for event in decoder.feed(chunk)]
        if len(events) != 1 or len(events[0].data) != EVENT_BYTES:
            raise AssertionError("the chunked event was not decoded whole")
        return events

    def whole() -> object:
        return SseDecoder().feed(raw)

    rounds = 5 if ctx.smoke else 40
    cand, base = paired(chunked, whole, rounds)
    return [
        Row(
            GROUP,
            f"one 2 MiB event in {CHUNK // 1024} KiB chunks ({len(chunks)} feeds)",
            Unit.MILLIS,
            cand,
            base,
            "the same bytes in one feed",
            Target.at_most(Measure.RATIO, 2.0, "<= 2x (linear)"),
        )
    ]
