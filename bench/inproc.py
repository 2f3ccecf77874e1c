"""3. In-process cost per request, each candidate interleaved with its baseline.

- The engine with the real OpenAI adapter, against a loopback server in another process
  (so the server's Python does not share the measured interpreter's GIL), compared with a
  raw kept-alive `httpx.Client.post` of the same bytes to the same server. Two wirings:
  the CLI's (`cli.runtime.wiring.build_engine`: each adapter inside the redacting wrapper;
  the engine keeps one adapter per deployment and key, so its connection stays alive
  between questions) and the bare adapter. An adapter encodes a request's body once and
  sends those bytes again for the same `Request` (a question's retries), so each wiring is
  measured twice: a new question each call (a fresh, equal `Request`, built before the
  timed loop: the figure the target is judged by) and one question's retry (the same
  `Request` object again). The CLI's wiring is also compared with a raw post that does the
  JSON work any client of the API does: `post(json=...)` of the same request (httpx
  encodes it to the same bytes) and `.json()` of the reply.
- The engine alone, with an in-memory provider, against calling that provider directly
  (the target: <= 100 us added, `ENGINE_ADDED`), with the memory store and with the real file store.
  Called back to back, the engine finds its code and data still in the caches; in a real
  call it runs after a wait on the socket that left them cold, about twice as slow for the
  same instructions. So it is also measured each call after an untimed raw post, the row
  the engine's share of the CLI's wiring is read from.
- The adapter's request build and reply parse alone: the adapter over an
  `httpx.MockTransport` against a raw client over the same transport (<= 50 us added,
  `ADAPTER_ADDED`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.loopback import ANSWER, COMPLETION, STREAM_GAP, Loopback
from bench.question import ARTICLES
from bench.stats import Measure, Row, Target, Unit, interleaved, paired, paired_calls

GROUP = "3 in-process"
KEY_ENV = "BENCH_OPENAI_API_KEY"
KEY = "sk-bench-not-a-real-key"
ADDED = Target(
    "<= 100 us median, <= 1 ms p99 added",
    ((Measure.ADDED_MEDIAN, 100e-6), (Measure.ADDED_P99, 1e-3)),
)
ENGINE_ADDED = Target.at_most(Measure.ADDED_MEDIAN, 100e-6, "<= 100 us median added")
ADAPTER_ADDED = Target.at_most(Measure.ADDED_MEDIAN, 50e-6, "<= 50 us median added")

Call = Callable[[], object]


class ServerProcess:
    """The loopback server in a child process; its port is the first line it prints."""

    def __enter__(self) -> ServerProcess:
        root = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.loopback"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=root,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _request() -> Any:
    from gateway.model import Article, Request
    from prompts import load_prompt, render

    articles = tuple(Article(name, name, text) for name, text in ARTICLES.items())
    return Request(
        system=render(load_prompt(None), product="Acme Cloud", articles=articles),
        question="How do I reset my password?",
        max_output_tokens=400,
        articles=articles,
        product="Acme Cloud",
    )


def _config(base_url: str) -> Any:
    from gateway.config import Config, Deployment
    from gateway.model import ProviderKind

    primary = Deployment(
        "primary",
        ProviderKind.OPENAI,
        128_000,
        model="gpt-4o-mini",
        api_key_env=KEY_ENV,
        base_url=base_url,
    )
    return Config(product="Acme Cloud", deployments=(primary,))


def _engine(config: Any, providers: Any, store: Any = None) -> Any:
    from gateway.clock import SystemClock
    from gateway.engine.loop import Engine
    from gateway.state.memory import MemoryStore
    from gateway.tokens import count_tokens

    clock = SystemClock()
    return Engine(
        config,
        providers=providers,
        store=MemoryStore() if store is None else store,
        clock=clock,
        sleeper=clock,
        rng=clock,
        environ={KEY_ENV: KEY},
        count_tokens=count_tokens,
    )


def _answered(engine: Any, request: Any) -> Call:
    def ask() -> object:
        result = engine.ask(request)
        if result.answer != ANSWER:
            raise AssertionError(f"the engine did not answer: {result.as_json()}")
        return result

    return ask


def fresh(request: Any, calls: int) -> Callable[[], Any]:
    """A new `Request` equal to `request` on each call (`calls` of them, built now, outside
    any timed call): what a new question's first attempt is given, where passing `request`
    itself again is a retry's (the adapter sends the body it encoded for it)."""
    from gateway.record import replace

    return iter([replace(request) for _ in range(calls)]).__next__


def _new_questions(engine: Any, request: Any, calls: int) -> Call:
    """`_answered`, a new question (an equal, fresh `Request`) each call."""
    new = fresh(request, calls)

    def ask() -> object:
        result = engine.ask(new())
        if result.answer != ANSWER:
            raise AssertionError(f"the engine did not answer: {result.as_json()}")
        return result

    return ask


def _captured_body(request: Any) -> bytes:
    """The exact bytes the adapter POSTs, so the raw baseline sends the same."""
    from gateway.providers import build_provider
    from gateway.secrets.key import Secret

    with Loopback() as server:
        config = _config(server.base_url)
        provider = build_provider(config.deployments[0], Secret(KEY))
        provider.complete(request, timeout=20)
        return server.last_body


def _cli_engine(config: Any) -> Any:
    """The engine as `support-ask` builds it: the real adapters, each redacting the run's
    keys from what comes back."""
    from cli.runtime.wiring import build_engine
    from gateway.clock import SystemClock
    from gateway.state.memory import MemoryStore

    clock = SystemClock()
    return build_engine(
        config, store=MemoryStore(), clock=clock, sleeper=clock, rng=clock, environ={KEY_ENV: KEY}
    )


def _over_loopback(ctx: Context, request: Any) -> list[Row]:
    import json

    import httpx

    from gateway.providers import build_provider

    body = _captured_body(request)
    payload = json.loads(body)
    n = ctx.sizes.inproc_iterations
    rows = []
    with ServerProcess() as server, httpx.Client() as raw:
        config = _config(server.base_url)
        url = f"{server.base_url}/chat/completions"
        headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

        def post() -> object:
            reply = raw.post(url, content=body, headers=headers)
            if reply.status_code != 200:
                raise AssertionError(f"loopback answered {reply.status_code}")
            return reply.content

        def post_json() -> object:
            reply = raw.post(url, json=payload, headers=headers)
            if reply.status_code != 200:
                raise AssertionError(f"loopback answered {reply.status_code}")
            return reply.json()["choices"][0]["message"]["content"]

        kept: dict[str, Any] = {}

        def keep(deployment: Any, key: Any) -> Any:
            if deployment.name not in kept:
                kept[deployment.name] = build_provider(deployment, key)
            return kept[deployment.name]

        base_name = "raw kept-alive httpx.Client.post"
        cli_engine = _cli_engine(config)
        bare_engine = _engine(config, keep)
        wired = "engine + openai adapter as the CLI wires them (redacting wrapper)"
        bare = "engine + bare openai adapter"
        for name, engine, target in (
            (
                f"{wired}, a new question each call",
                _new_questions(cli_engine, request, paired_calls(n)),
                ADDED,
            ),
            (
                f"{wired}, a question's retry (one Request again)",
                _answered(cli_engine, request),
                None,
            ),
            (
                f"{bare}, a new question each call",
                _new_questions(bare_engine, request, paired_calls(n)),
                None,
            ),
        ):
            cand, base = paired(engine, post, n)
            rows.append(Row(GROUP, name, Unit.MICROS, cand, base, base_name, target))
        cand, base = paired(_new_questions(cli_engine, request, paired_calls(n)), post_json, n)
        name = f"{wired}, a new question each call, vs a raw post with its JSON"
        base_json = "raw kept-alive post(json=) + .json()"
        rows.append(Row(GROUP, name, Unit.MICROS, cand, base, base_json))

        # The adapter alone on real sockets: what the engine's rows owe to the HTTP layer
        # (deadline watchdog, streamed read) rather than to the engine.
        adapter = keep(config.deployments[0], None)
        new = fresh(request, paired_calls(n))

        def call() -> object:
            return adapter.complete(new(), timeout=20.0)

        cand, base = paired(call, post, n)
        name = "openai adapter alone, kept (no engine), a new request each call"
        rows.append(Row(GROUP, name, Unit.MICROS, cand, base, base_name))
        rows.append(_engine_after_post(request, post, n))
        rows.append(_first_token(ctx, _engine(config, keep), raw, url, headers, request))
    return rows


def first_token_s(engine: Any, request: Any) -> float:
    """Seconds from `engine.ask` to its first streamed `on_text`; the answer is checked."""
    first: list[float] = []

    def on_text(text: str) -> None:
        if not first:
            first.append(time.perf_counter())

    t0 = time.perf_counter()
    result = engine.ask(request, on_text=on_text)
    if result.answer != ANSWER or not first:
        raise AssertionError(f"the streamed answer went wrong: {result.as_json()}")
    return first[0] - t0


def _first_token(
    ctx: Context, engine: Any, raw: Any, url: str, headers: dict[str, str], request: Any
) -> Row:
    """Time to the first streamed token: the engine's `on_text` against the first SSE
    frame a raw `httpx.Client.stream` yields. The server holds the rest of the answer back
    for STREAM_GAP, so any buffering on the way would show up as that much delay."""
    import json

    payload = json.loads(_captured_body(request))
    payload["stream"] = True
    stream_body = json.dumps(payload).encode()

    def via_engine() -> float:
        return first_token_s(engine, request)

    def via_raw() -> float:
        took = None
        t0 = time.perf_counter()
        with raw.stream("POST", url, content=stream_body, headers=headers) as reply:
            for line in reply.iter_lines():  # read to the end: the connection stays alive
                if took is None and line.startswith("data: "):
                    took = time.perf_counter() - t0
        if took is None:
            raise AssertionError("the raw stream carried no data")
        return took

    cand, base = interleaved(via_engine, via_raw, max(3, ctx.sizes.inproc_iterations // 100))
    return Row(
        GROUP,
        f"streamed: time to first token (rest held back {STREAM_GAP * 1000:g} ms)",
        Unit.MICROS,
        cand,
        base,
        "raw httpx stream, first data: line",
        Target.at_most(Measure.ADDED_MEDIAN, 1e-3, "no buffering: <= 1 ms added"),
    )


class _InMemoryProvider:
    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def complete(self, request: Any, *, timeout: float, on_text: Any = None, **_: Any) -> Any:
        return self.reply


def _in_memory(request: Any) -> tuple[Call, Callable[[Any], Any]]:
    """The in-memory provider called directly, and a factory of engines asking it."""
    from gateway.model import Reply

    provider = _InMemoryProvider(Reply(text=ANSWER, finish_reason="stop", model="gpt-4o-mini"))
    config = _config("http://127.0.0.1:9/v1")  # never called: the provider is in memory

    def direct() -> object:
        return provider.complete(request, timeout=20.0)

    def factory(deployment: Any, key: Any) -> Any:
        return provider

    return direct, lambda store: _engine(config, factory, store)


def _engine_after_post(request: Any, post: Call, n: int) -> Row:
    """The engine alone as it runs in a real call: each timed call (the engine's and its
    baseline's) comes after an untimed raw post, whose wait on the socket leaves the caches
    cold for the engine's code and data, where the rows of `_engine_alone` call it back to
    back with everything it touches still in them (bench/RESULTS.md, engine7)."""
    direct, engine = _in_memory(request)
    ask = _new_questions(engine(None), request, paired_calls(n))
    cand, base = paired(ask, direct, n, before=post)
    name = "engine alone, memory store, each call after a raw post (as in a real call)"
    return Row(GROUP, name, Unit.MICROS, cand, base, "the provider called directly, after one")


def _engine_alone(ctx: Context, request: Any) -> list[Row]:
    from gateway.model import ErrorKind
    from gateway.state.file import FileStore

    direct, engine = _in_memory(request)
    n = ctx.sizes.engine_iterations
    base_name = "the provider called directly"
    cand, base = paired(_answered(engine(None), request), direct, n)
    rows = [
        Row(GROUP, "engine alone, memory store", Unit.MICROS, cand, base, base_name, ENGINE_ADDED)
    ]
    store = FileStore(ctx.folder("inproc") / "cooldowns.json")
    now = time.time()
    for i in range(3):  # a lived-in state file: other deployments cooling down
        store.cool(f"other-{i}", until=now + 3600, kind=ErrorKind.RATE_LIMIT, now=now)
    cand, base = paired(_answered(engine(store), request), direct, n // 4)
    name = "engine alone, file store (3 entries)"
    rows.append(Row(GROUP, name, Unit.MICROS, cand, base, base_name))
    return rows


def _adapter_alone(ctx: Context, request: Any) -> list[Row]:
    import httpx

    from gateway.providers import build_provider
    from gateway.secrets.key import Secret

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=COMPLETION, headers={"content-type": "application/json"})

    body = _captured_body(request)
    config = _config("http://127.0.0.1:9/v1")
    transport = httpx.MockTransport(handler)
    provider = build_provider(config.deployments[0], Secret(KEY), transport=transport)
    raw = httpx.Client(transport=transport)
    url = "http://127.0.0.1:9/v1/chat/completions"
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

    new = fresh(request, paired_calls(ctx.sizes.inproc_iterations))

    def adapter() -> object:
        reply = provider.complete(new(), timeout=20.0)
        if reply.text != ANSWER:
            raise AssertionError(f"the adapter read {reply!r}")
        return reply

    def post() -> object:
        return raw.post(url, content=body, headers=headers).content

    cand, base = paired(adapter, post, ctx.sizes.inproc_iterations)
    raw.close()
    return [
        Row(
            GROUP,
            "openai adapter build + parse (MockTransport), a new request each call",
            Unit.MICROS,
            cand,
            base,
            "raw httpx.Client.post, same transport",
            ADAPTER_ADDED,
        )
    ]


def run(ctx: Context) -> list[Row]:
    request = _request()
    return _over_loopback(ctx, request) + _engine_alone(ctx, request) + _adapter_alone(ctx, request)
