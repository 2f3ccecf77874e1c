"""The fake servers' front door: an httpx transport that routes each request to its deployment.

`SimulatedTransport` counts every deployment's calls, asks the deployment's fault schedule
what this call gets, and has the provider's `Wire` answer in its real format. Faults that
are not answers are played here, the same for every provider:

- `timeout` stays silent until the client gives up: at the attempt's deadline, which the
  adapters' client hands over in the request's extensions (`DEADLINE_EXTENSION`), or
  else at the request's read timeout (httpx's `extensions["timeout"]`). On a
  `VirtualClock` it advances the clock without sleeping, on a real clock it really waits;
  then it raises `httpx.ReadTimeout`, as a read cut short by the client's watchdog would.
- `slow:D` holds back the first text delta (a whole reply: the response) for D seconds,
  `stall:N` goes silent after N deltas (a whole reply: after its headers); the client may
  give up first, exactly at its first-token or stall deadline.
- `reset` drops the connection before any byte. `cut:N` on a streamed request sends N
  text deltas and drops the connection before the terminal marker (finish reason,
  `message_stop`, `[DONE]`), even when N covers every delta; on a request that does not
  stream it behaves like `reset`.
- A status with no `@` sends no retry hint at all, so plain backoff can be seen.
- The fake servers also check what a real server checks (the endpoint path, required body
  fields, valid JSON) and answer a mistake with the provider's real 400/404, so an adapter
  bug shows up in simulation as it would in production.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

import httpx

from gateway.clock import VirtualClock
from gateway.config import Deployment
from gateway.model import ProviderKind
from gateway.providers.deadline import Deadline
from gateway.providers.http import DEADLINE_EXTENSION
from gateway.seams import Clock, Sleeper
from gateway.simulate.addresses import SIM_HOST
from gateway.simulate.answers import Answerer, answer_text, tagged
from gateway.simulate.anthropic import AnthropicWire
from gateway.simulate.azure import AzureWire
from gateway.simulate.gemini import GeminiWire
from gateway.simulate.grammar import Fault, FaultKind, Step
from gateway.simulate.openai import OpenAIWire
from gateway.simulate.wire import Call, Frames, Hold, Wire, load_body

_DEFAULT_READ_TIMEOUT = 5.0  # httpx's own default, for a request that carries none


class SimClock(Clock, Sleeper, Protocol):
    """What the transport needs of time: the wall clock for timestamps, and waiting."""


_WIRES: Mapping[ProviderKind, Wire] = {
    ProviderKind.OPENAI: OpenAIWire(),
    ProviderKind.AZURE: AzureWire(),
    ProviderKind.ANTHROPIC: AnthropicWire(),
    ProviderKind.GEMINI: GeminiWire(),
}


class SimulatedTransport(httpx.BaseTransport):
    """Fake provider servers, in process: every deployment answers at its simulated address.

    Give the provider adapters this transport and `simulated_deployment(d)` for each
    deployment. `calls` counts the requests each deployment received, faulted or not.
    A request for any other address fails like an unknown host: nothing leaves the process.

    Each answer is tagged with the deployment's name. With an `answerer` (see
    `local_answerer`) the rest is what it says to the question; without one, a generic line.
    """

    def __init__(
        self,
        deployments: Iterable[Deployment],
        faults: Mapping[str, Fault] | None = None,
        *,
        clock: SimClock,
        answerer: Answerer | None = None,
    ) -> None:
        self._deployments = {d.name: d for d in deployments if d.provider is not ProviderKind.LOCAL}
        self._faults = dict(faults or {})
        self._clock = clock
        self._answerer = answerer
        self._lock = threading.Lock()
        self.calls: dict[str, int] = dict.fromkeys(self._deployments, 0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deployment = self._deployment(request)
        wire = _WIRES[deployment.provider]
        with self._lock:
            self.calls[deployment.name] += 1
            number = self.calls[deployment.name]
        rejected = wire.reject(request, deployment)
        if rejected is not None:
            return rejected
        body = load_body(request)
        assert isinstance(body, dict)  # reject() answered anything else
        call = Call(
            request=request,
            body=body,
            deployment=deployment,
            number=number,
            question=wire.question(body),
            stream=wire.streams(request, body),
            input_tokens=_estimate_tokens(request.content),
            now=self._clock.wall(),
        )
        fault = self._faults.get(deployment.name)
        step = None if fault is None else fault.at(number)
        return self._respond(wire, call, step)

    def _deployment(self, request: httpx.Request) -> Deployment:
        name = request.url.path.lstrip("/").split("/", 1)[0]
        deployment = self._deployments.get(name) if request.url.host == SIM_HOST else None
        if deployment is None:
            raise httpx.ConnectError(
                f"simulated transport: no deployment at {request.url.host}/{name}"
                " (pass simulated_deployment(d) to the adapter)",
                request=request,
            )
        return deployment

    def _respond(self, wire: Wire, call: Call, step: Step | None) -> httpx.Response:
        request = call.request
        if step is None:
            text = self._answer(call)
            if call.stream:
                return wire.stream(call, text).response(request, wire.headers(call))
            return wire.answer(call, text)
        match step.kind:
            case FaultKind.STATUS:
                assert step.status is not None
                return wire.error(call, step.status, step.retry_after)
            case FaultKind.TIMEOUT:
                self._holder(request)(math.inf)
                raise httpx.ReadTimeout("The read operation timed out", request=request)
            case FaultKind.CUT if call.stream:
                stream = wire.stream(call, self._answer(call))
                return stream.response(request, wire.headers(call), cut=step.tokens)
            case FaultKind.SLOW if call.stream:
                stream = wire.stream(call, self._answer(call))
                hold = self._holder(request)
                return stream.response(request, wire.headers(call), pause=(0, step.delay, hold))
            case FaultKind.SLOW:
                if self._holder(request)(step.delay):
                    raise httpx.ReadTimeout("The read operation timed out", request=request)
                return wire.answer(call, self._answer(call))
            case FaultKind.STALL if call.stream:
                stream = wire.stream(call, self._answer(call))
                hold = self._holder(request)
                return stream.response(
                    request, wire.headers(call), pause=(step.tokens, math.inf, hold)
                )
            case FaultKind.STALL:
                # The headers, then a body that never comes.
                whole = wire.answer(call, self._answer(call))
                return _stalled(request, whole, self._holder(request))
            case FaultKind.RESET | FaultKind.CUT:
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                )
            case FaultKind.LIMIT:
                return wire.limit(call, self._answer(call))
            case FaultKind.EMPTY:
                return wire.empty(call)
            case FaultKind.REFUSAL:
                return wire.refusal(call)
            case FaultKind.BLOCKED:
                return wire.blocked(call)
            case FaultKind.OVERFLOW:
                return wire.overflow(call)
            case FaultKind.QUOTA:
                return wire.quota(call)
            case FaultKind.OK:  # pragma: no cover - Fault.at never hands out OK
                return self._respond(wire, call, None)
        raise AssertionError(f"unhandled fault {step}")  # pragma: no cover

    def _answer(self, call: Call) -> str:
        if self._answerer is None:
            return answer_text(call.name, call.question)
        return tagged(call.name, self._answerer(call.question))

    def _holder(self, request: httpx.Request) -> Hold:
        """Silence for up to so many seconds, over when the client gives up: at its
        deadline when the request carries one (`DEADLINE_EXTENSION`), else at its read
        timeout. True when the client gave up first."""
        deadline = request.extensions.get(DEADLINE_EXTENSION)

        def hold(seconds: float) -> bool:
            now = self._clock.monotonic()
            if isinstance(deadline, Deadline):
                give_up = deadline.give_up_at()
            else:
                give_up = now + self._read_timeout(request)
            if give_up <= now + seconds:
                self._wait_until(give_up)
                return True
            self._wait_until(now + seconds)
            return False

        return hold

    @staticmethod
    def _read_timeout(request: httpx.Request) -> float:
        timeout = request.extensions.get("timeout") or {}
        read = timeout.get("read") if isinstance(timeout, dict) else None
        return float(read) if read is not None else _DEFAULT_READ_TIMEOUT

    def _wait_until(self, when: float) -> None:
        # Virtual time moves the clock without recording a sleep: the engine did not
        # choose to wait, the server just never answered.
        if isinstance(self._clock, VirtualClock):
            self._clock.advance_to(when)
        else:
            self._clock.sleep(when - self._clock.monotonic())


def _stalled(request: httpx.Request, whole: httpx.Response, hold: Hold) -> httpx.Response:
    """`whole`'s status and headers, then a body that stalls until the client gives up."""
    body = whole.read()
    cut = max(1, len(body) // 2)
    return httpx.Response(
        whole.status_code,
        headers=whole.headers,
        stream=Frames(
            [body[:cut], body[cut:]], dropped=False, request=request, pause=(1, math.inf, hold)
        ),
    )


def _estimate_tokens(body: bytes) -> int:
    return max(1, math.ceil(len(body) / 4))
