"""The first-token and stall deadlines, over real sockets, in each provider's wire format.

Every server is tests/support/loopback.py on 127.0.0.1, replaying the providers' recorded replies
(tests/support/fixtures/providers). Most tests run the adapter on a VirtualClock that the server
moves forward, so a 12-second silence costs nothing; the `real time` ones check that the
watchdog itself cuts a blocked read at the deadline, with deadlines of a few tenths of a
second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.model import ErrorKind, ProviderError, ProviderKind, Request, Timer
from gateway.providers import build_provider
from gateway.seams import Provider
from gateway.secrets.key import Secret
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.provider_fixtures import body_bytes, case

REQUEST = Request(system="Be brief.", question="How do I change my plan?", max_output_tokens=50)
MARGIN = 0.25

# provider -> (a whole reply, a stream, the stream's first text)
FIXTURES = {
    ProviderKind.OPENAI: ("openai/chat_completion", "openai/stream", "Hello"),
    ProviderKind.AZURE: ("azure/chat_completion", "azure/stream", "Open Settings"),
    ProviderKind.ANTHROPIC: ("anthropic/message", "anthropic/stream", "Hello"),
    ProviderKind.GEMINI: ("gemini/generate", "gemini/stream", "Go to Settings"),
}
KINDS = list(FIXTURES)


def adapter(kind: ProviderKind, url: str, clock: VirtualClock | None = None) -> Provider:
    deployment = Deployment(
        name="primary",
        provider=kind,
        context_window=128_000,
        model="support-chat" if kind is ProviderKind.AZURE else "m",
        base_url=url + ("/v1" if kind is ProviderKind.OPENAI else ""),
        api_version="2024-10-21" if kind is ProviderKind.AZURE else None,
    )
    return build_provider(deployment, Secret("sk-loopback-test-key-000000"), clock=clock)


def frames(name: str) -> list[bytes]:
    """The recorded stream, one server-sent event per item, as it goes on the wire."""
    newline = case(name).get("newline", "\n").encode()
    blank = newline * 2
    return [part + blank for part in body_bytes(name).split(blank) if part.strip()]


def first_text_at(kind: ProviderKind) -> int:
    marker = FIXTURES[kind][2].encode()
    return next(n for n, frame in enumerate(frames(FIXTURES[kind][1])) if marker in frame)


def start(ex: Exchange, kind: ProviderKind) -> None:
    ex.start(headers=case(FIXTURES[kind][1])["headers"])


def whole(ex: Exchange, kind: ProviderKind) -> None:
    name = FIXTURES[kind][0]
    ex.respond(200, body_bytes(name), headers={"x-request-id": "req_1"})


def failing(call: Callable[[], object]) -> tuple[ProviderError, float]:
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value, time.monotonic() - started


# --------------------------------------------------------------------------- first token


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_a_stream_with_no_text_by_the_first_token_deadline_fails_with_nothing_shown(
    kind: ProviderKind,
) -> None:
    clock = VirtualClock()
    at = first_text_at(kind)

    def handler(ex: Exchange) -> None:
        start(ex, kind)
        for frame in frames(FIXTURES[kind][1])[:at]:
            ex.send(frame)  # the role chunk, message_start, pings: no text yet
        clock.advance(12)
        for frame in frames(FIXTURES[kind][1])[at:]:
            ex.send(frame)
        ex.end()

    shown: list[str] = []
    with LoopbackServer(handler) as server:
        error, _ = failing(
            lambda: adapter(kind, server.url, clock).complete(
                REQUEST, timeout=20, on_text=shown.append, first_token=10, stall=5
            )
        )
    assert error.failure.kind is ErrorKind.TIMEOUT
    assert error.failure.timer is Timer.FIRST_TOKEN
    assert "first_token_timeout (10 s)" in error.failure.detail
    assert shown == [] and error.partial == ""


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_a_whole_reply_whose_response_comes_after_the_first_token_deadline_fails(
    kind: ProviderKind,
) -> None:
    clock = VirtualClock()

    def handler(ex: Exchange) -> None:
        clock.advance(11)
        whole(ex, kind)

    with LoopbackServer(handler) as server:
        error, _ = failing(
            lambda: adapter(kind, server.url, clock).complete(REQUEST, timeout=20, first_token=10)
        )
    assert (error.failure.kind, error.failure.timer) == (ErrorKind.TIMEOUT, Timer.FIRST_TOKEN)
    assert "no response within first_token_timeout" in error.failure.detail


@pytest.mark.parametrize("kind", KINDS, ids=str)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_without_a_first_token_deadline_the_same_slow_start_is_waited_for(
    kind: ProviderKind, stream: bool
) -> None:
    # What the last deployment that can still be tried gets: the whole attempt.
    clock = VirtualClock()

    def handler(ex: Exchange) -> None:
        clock.advance(12)
        if not stream:
            whole(ex, kind)
            return
        start(ex, kind)
        for frame in frames(FIXTURES[kind][1]):
            ex.send(frame)
        ex.end()

    shown: list[str] = []
    with LoopbackServer(handler) as server:
        reply = adapter(kind, server.url, clock).complete(
            REQUEST, timeout=20, on_text=shown.append if stream else None, stall=5
        )
    assert reply.text.strip() and reply.finish_reason
    assert "".join(shown) == (reply.text if stream else "")


def test_whitespace_is_not_a_first_token_and_never_reaches_the_customer() -> None:
    clock = VirtualClock()
    blank = frames("openai/stream")[1].replace(b'"Hello"', b'"\\n\\n "')

    def handler(ex: Exchange) -> None:
        start(ex, ProviderKind.OPENAI)
        ex.send(frames("openai/stream")[0])
        ex.send(blank)
        clock.advance(11)
        ex.send(frames("openai/stream")[2])
        ex.end()

    shown: list[str] = []
    with LoopbackServer(handler) as server:
        error, _ = failing(
            lambda: adapter(ProviderKind.OPENAI, server.url, clock).complete(
                REQUEST, timeout=20, on_text=shown.append, first_token=10
            )
        )
    assert error.failure.timer is Timer.FIRST_TOKEN
    assert shown == []


# --------------------------------------------------------------------------- stalls


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_a_stream_that_stalls_after_text_fails_with_the_text_already_shown(
    kind: ProviderKind,
) -> None:
    clock = VirtualClock()
    at = first_text_at(kind)
    seen = threading.Event()

    def handler(ex: Exchange) -> None:
        start(ex, kind)
        sent = frames(FIXTURES[kind][1])
        for frame in sent[: at + 1]:
            ex.send(frame)
        seen.wait(5)  # the client has the first text: now the silence
        clock.advance(6)
        for frame in sent[at + 1 :]:
            ex.send(frame)
        ex.end()

    shown: list[str] = []

    def show(text: str) -> None:
        shown.append(text)
        seen.set()

    with LoopbackServer(handler) as server:
        error, _ = failing(
            lambda: adapter(kind, server.url, clock).complete(
                REQUEST, timeout=20, on_text=show, first_token=10, stall=5
            )
        )
    assert (error.failure.kind, error.failure.timer) == (ErrorKind.TIMEOUT, Timer.STALL)
    assert error.failure.detail == "the reply stalled: nothing for stall_timeout (5 s)"
    assert error.partial == FIXTURES[kind][2] == "".join(shown)


def test_real_time_chunks_closer_together_than_the_stall_deadline_never_trip_it() -> None:
    # 0.1 s apart, about 0.8 s in all: the stall clock starts again with every chunk.
    def handler(ex: Exchange) -> None:
        start(ex, ProviderKind.ANTHROPIC)
        for frame in frames("anthropic/stream"):
            if not ex.pause(0.1):
                return
            ex.send(frame)
        ex.end()

    shown: list[str] = []
    with LoopbackServer(handler) as server:
        reply = adapter(ProviderKind.ANTHROPIC, server.url).complete(
            REQUEST, timeout=5, on_text=shown.append, first_token=2, stall=0.6
        )
    assert reply.text == "Hello!" == "".join(shown)


def test_a_stream_kept_open_after_its_finish_reason_is_a_complete_answer() -> None:
    # Some OpenAI-compatible servers send finish_reason (and the usage chunk) but never
    # `[DONE]`, and keep the connection open: after a stall's silence the answer stands.
    clock = VirtualClock()
    done = threading.Event()
    sent = frames("openai/stream")[:-1]  # everything but [DONE]

    def handler(ex: Exchange) -> None:
        start(ex, ProviderKind.OPENAI)
        # One chunk: the client reads the finish reason and the usage in the read that shows
        # the text, so the clock moves only once they are in, and the stall falls on the
        # keep-alive's read. Sent apart, a read after the clock moved saw a stall before the
        # usage chunk, and the answer stood without it (a race a loaded CI lost).
        ex.send(b"".join(sent))
        done.wait(30)  # generous: a loaded machine may be slow to read
        clock.advance(6)
        ex.send(": keep-alive\n\n")
        ex.hang()

    def show(text: str) -> None:
        if "help?" in text:
            done.set()

    with LoopbackServer(handler) as server:
        reply = adapter(ProviderKind.OPENAI, server.url, clock).complete(
            REQUEST, timeout=20, on_text=show, first_token=10, stall=5
        )
    assert reply.text == "Hello there, how can I help?"
    assert reply.finish_reason == "stop"
    assert (reply.input_tokens, reply.output_tokens) == (22, 8)  # the usage chunk was read


# --------------------------------------------------------------------------- real time


def test_real_time_the_watchdog_cuts_a_silent_first_token_at_its_deadline() -> None:
    def handler(ex: Exchange) -> None:
        start(ex, ProviderKind.OPENAI)
        ex.send(frames("openai/stream")[0])
        ex.hang()

    with LoopbackServer(handler) as server:
        error, elapsed = failing(
            lambda: adapter(ProviderKind.OPENAI, server.url).complete(
                REQUEST, timeout=5, on_text=lambda _: None, first_token=0.3, stall=5
            )
        )
    assert error.failure.timer is Timer.FIRST_TOKEN
    assert not error.failure.silent  # the headers came
    assert 0.3 - 0.05 <= elapsed < 0.3 + MARGIN


def test_real_time_the_watchdog_cuts_a_stall_after_text_at_its_deadline() -> None:
    def handler(ex: Exchange) -> None:
        start(ex, ProviderKind.ANTHROPIC)
        for frame in frames("anthropic/stream")[: first_text_at(ProviderKind.ANTHROPIC) + 1]:
            ex.send(frame)
        ex.hang()

    shown: list[str] = []
    with LoopbackServer(handler) as server:
        error, elapsed = failing(
            lambda: adapter(ProviderKind.ANTHROPIC, server.url).complete(
                REQUEST, timeout=5, on_text=shown.append, first_token=2, stall=0.3
            )
        )
    assert error.failure.timer is Timer.STALL
    assert error.partial == "Hello" == "".join(shown)
    assert elapsed < 0.3 + MARGIN


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_real_time_a_server_that_never_answers_is_silent(stream: bool) -> None:
    with LoopbackServer(lambda ex: ex.hang()) as server:
        error, elapsed = failing(
            lambda: adapter(ProviderKind.GEMINI, server.url).complete(
                REQUEST, timeout=0.4, on_text=(lambda _: None) if stream else None, stall=0.1
            )
        )
    assert (error.failure.kind, error.failure.timer) == (ErrorKind.TIMEOUT, Timer.ATTEMPT)
    assert error.failure.silent
    assert "no response within the attempt's 0.4 s" in error.failure.detail
    assert elapsed < 0.4 + MARGIN


def test_real_time_a_whole_reply_slower_than_its_first_token_deadline_is_cut_silent() -> None:
    with LoopbackServer(lambda ex: ex.hang()) as server:
        error, elapsed = failing(
            lambda: adapter(ProviderKind.AZURE, server.url).complete(
                REQUEST, timeout=5, first_token=0.3
            )
        )
    assert error.failure.timer is Timer.FIRST_TOKEN
    assert error.failure.silent
    assert elapsed < 0.3 + MARGIN


# --------------------------------------------------------------------------- the watchdog


def test_a_process_that_cancels_every_alarm_keeps_the_watchdog_heap_small() -> None:
    # A batch arms a deadline per attempt and cancels nearly all of them when the answer
    # comes; they must not pile up until their (minutes-away) deadlines pass.
    from gateway.providers.deadline import _Watchdog

    watchdog = _Watchdog()
    live = [watchdog.arm(600, lambda: None) for _ in range(5)]
    for _ in range(10_000):
        watchdog.arm(600, lambda: None).cancel()
    assert len(watchdog._heap) <= 2 * 64
    fired = threading.Event()
    watchdog.arm(0.01, fired.set)
    assert fired.wait(5), "a live alarm armed after the sweeps still fires"
    assert all(not alarm.cancelled for alarm in live), "a sweep never drops a live alarm"


def test_the_watchdog_thread_never_takes_a_stop_signal() -> None:
    """A Ctrl-C or TERM the kernel gave the watchdog would wait for the read's timeout
    (clock.start_daemon): its actions run with the stop signals blocked."""
    import signal

    from gateway.clock import STOPS
    from gateway.providers.deadline import arm

    seen: list[set[int]] = []
    ran = threading.Event()
    arm(0.0, lambda: (seen.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, []))), ran.set()))
    assert ran.wait(10)
    assert seen[0] >= STOPS


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_finished_attempt_is_freed_as_it_returns_not_left_to_the_collector(
    stream: bool,
) -> None:
    # An attempt's deadline, its cut and its cancelled alarm once held each other in a
    # cycle, which only the garbage collector's runs freed (bench/RESULTS.md, engine7).
    import gc

    from gateway.providers.deadline import Deadline

    def handler(ex: Exchange) -> None:
        if not stream:
            whole(ex, ProviderKind.OPENAI)
            return
        start(ex, ProviderKind.OPENAI)
        for frame in frames(FIXTURES[ProviderKind.OPENAI][1]):
            ex.send(frame)
        ex.end()

    def deadlines() -> int:
        return sum(isinstance(o, Deadline) for o in gc.get_objects())

    with LoopbackServer(handler) as server:
        provider = adapter(ProviderKind.OPENAI, server.url)
        on_text = [].append if stream else None
        provider.complete(REQUEST, timeout=20, on_text=on_text, stall=5)  # connected
        gc.collect()
        gc.disable()
        try:
            before = deadlines()
            for _ in range(3):
                reply = provider.complete(REQUEST, timeout=20, on_text=on_text, stall=5)
            left = deadlines() - before
        finally:
            gc.enable()
    assert reply.text.strip()
    assert left == 0, f"{left} finished attempts' deadlines wait for the collector"
