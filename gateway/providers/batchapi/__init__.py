"""The providers' Batch APIs: a backlog sent as one job, answered within 24 hours at the
batch price.

One module per provider's wire format (`openai` with `azure` on top of it, `anthropic`,
`gemini`), what they share in `records` (the job's state and counts, one request's
outcome) and `wire` (the HTTP calls, and THE place their foreign exceptions become a
`ProviderError`). Each adapter builds a request's body with the same function its
provider's chat adapter uses, and reads a result with the same parser, so a batch
answer means what an ordinary answer means.

`batch_api` builds the one a deployment needs; a deployment whose provider has none
(`local`) is a `NoBatchApi`, whose message names the fix. Each adapter says what one job
may hold (its `CAPS`), and `parts` splits a bigger backlog into as many jobs as needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from gateway.model import ProviderKind
from gateway.providers.batchapi.records import (
    BatchApi,
    BatchState,
    Caps,
    Counts,
    Entry,
    ItemKind,
    ItemResult,
    NoBatchApi,
    Snapshot,
)

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

# "module:class" per protocol; every class takes (deployment, key, *, transport, clock,
# caps), `caps` in place of its provider's own (`CAPS`) when given.
BATCH_ADAPTERS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.OPENAI: "gateway.providers.batchapi.openai:OpenAIBatches",
        ProviderKind.AZURE: "gateway.providers.batchapi.azure:AzureBatches",
        ProviderKind.ANTHROPIC: "gateway.providers.batchapi.anthropic:AnthropicBatches",
        ProviderKind.GEMINI: "gateway.providers.batchapi.gemini:GeminiBatches",
    }
)


def batch_api(
    deployment: Deployment,
    key: Secret | None,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock | None = None,
    caps: Caps | None = None,
) -> BatchApi:
    """The Batch API of `deployment`'s provider; NoBatchApi when it has none. `caps`: what
    one job may hold, in place of the provider's own (a test's small backlog)."""
    where = BATCH_ADAPTERS.get(deployment.provider)
    if where is None:
        raise NoBatchApi(
            f"the deployment {deployment.name} ({deployment.provider}) has no Batch API",
            fix="put a deployment of openai, azure, anthropic or gemini first "
            "(-d NAME picks one), or run `support-ask batch FILE` without --provider-batch",
        )
    module, _, name = where.partition(":")
    api: BatchApi = getattr(importlib.import_module(module), name)(
        deployment, key, transport=transport, clock=clock, caps=caps
    )
    return api


__all__ = [
    "BATCH_ADAPTERS",
    "BatchApi",
    "BatchState",
    "Caps",
    "Counts",
    "Entry",
    "ItemKind",
    "ItemResult",
    "NoBatchApi",
    "Snapshot",
    "batch_api",
]
