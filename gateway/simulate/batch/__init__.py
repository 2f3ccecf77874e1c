"""Fake Batch API servers, one per provider's documented wire format, for offline tests and
demos: `OpenAIBatchServer` (and Azure's, `azure=True`), `AnthropicBatchServer`,
`GeminiBatchServer`. Each is an httpx transport (hand it to `batch_api`) that also
answers a plain `(method, url, headers, body)` exchange (`serve`), so a test can put it
behind a server on 127.0.0.1 for a real process.

What each request of a job gets, and how the job ends, is a `BatchPlan`: requests that
error, requests the window leaves unrun (expired), a job cancelled part way, a job
refused as a whole, and how many looks it takes to end. Each server checks what the
real one checks (the key, the paths, required fields, unique custom ids) and answers a
mistake with that provider's error body.
"""

from gateway.simulate.batch.anthropic import AnthropicBatchServer
from gateway.simulate.batch.gemini import GeminiBatchServer
from gateway.simulate.batch.openai import OpenAIBatchServer
from gateway.simulate.batch.plan import BatchPlan, BatchServer, Outcome

__all__ = [
    "AnthropicBatchServer",
    "BatchPlan",
    "BatchServer",
    "GeminiBatchServer",
    "OpenAIBatchServer",
    "Outcome",
]
