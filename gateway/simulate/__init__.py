"""Fault injection: in-process fake providers that speak each provider's real wire format.

`support-ask simulate` (and `eval --simulate`) runs the real engine, adapters and
classifier against `SimulatedTransport`, an httpx transport that never touches the
network. Each deployment is pointed at its own fake address (`simulated_deployment`),
answers in its provider's real format (OpenAI, Azure OpenAI, Anthropic Messages, Gemini
generateContent, streamed or not), and fails exactly as the user asked with
`--fail NAME=SPEC` (`parse_faults`; the grammar is in `grammar`).

One concern per module:

- `grammar`: the `--fail` grammar (`Fault`, `Step`, `FaultKind`, `parse_fault(s)`,
  `check_names`, `GRAMMAR`);
- `addresses`: each deployment's fake address (`simulated_deployment`, `SIM_HOST`);
- `transport`: routing by deployment, call counting, timeouts, resets and cuts;
- `answers`: what a success says (`answer_text`, `local_answerer`, `prompt_answerer`);
- `setup`: the config and environment a simulation runs with (`simulated_config`,
  `simulated_environ`);
- `wire`: what every fake server shares (the call, JSON and SSE framing, streams);
- `openai`, `azure`, `anthropic`, `gemini`: one provider's dialect each: success bodies,
  stream events, error bodies per status, refusal/blocked/quota/overflow forms, and the
  request checks a real server makes.

Retry-After goes where the provider puts it: a whole-second `retry-after` header (rounded
up, as HTTP requires) for OpenAI, Azure and Anthropic, plus the exact `retry-after-ms`
for OpenAI and Azure and "try again in ..." in their message text; for Gemini,
`RetryInfo.retryDelay` in the body and "Please retry in ...". `local` deployments are not
HTTP: `simulated_deployment` leaves them alone and `check_names` rejects faults aimed at
them.
"""

from gateway.simulate.addresses import AZURE_API_VERSION, SIM_HOST, simulated_deployment
from gateway.simulate.answers import Answerer, answer_text, local_answerer, prompt_answerer
from gateway.simulate.grammar import (
    GRAMMAR,
    Fault,
    FaultKind,
    Step,
    check_names,
    parse_fault,
    parse_faults,
)
from gateway.simulate.setup import DUMMY_KEY, simulated_config, simulated_environ
from gateway.simulate.transport import SimClock, SimulatedTransport
from gateway.simulate.wire import REFUSAL_TEXT

__all__ = [
    "AZURE_API_VERSION",
    "DUMMY_KEY",
    "GRAMMAR",
    "REFUSAL_TEXT",
    "SIM_HOST",
    "Answerer",
    "Fault",
    "FaultKind",
    "SimClock",
    "SimulatedTransport",
    "Step",
    "answer_text",
    "check_names",
    "local_answerer",
    "parse_fault",
    "parse_faults",
    "prompt_answerer",
    "simulated_config",
    "simulated_deployment",
    "simulated_environ",
]
