"""Provider adapters, one per wire protocol, built on demand.

`build_provider` imports only the adapter a deployment needs: a run that ends on the
offline `local` deployment never imports httpx at all, and one that calls Anthropic never
loads the Gemini code.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from gateway.model import ProviderKind

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.seams import Clock, Provider
    from gateway.secrets.key import Secret

# "module:class" per protocol; every class takes (deployment, key, *, transport, clock).
ADAPTERS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.OPENAI: "gateway.providers.openai:OpenAIProvider",
        ProviderKind.AZURE: "gateway.providers.azure:AzureProvider",
        ProviderKind.ANTHROPIC: "gateway.providers.anthropic:AnthropicProvider",
        ProviderKind.GEMINI: "gateway.providers.gemini:GeminiProvider",
    }
)


def build_provider(
    deployment: Deployment,
    key: Secret | None,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock | None = None,
) -> Provider:
    """The adapter for `deployment`. `transport` replaces the network (tests, `simulate`);
    `clock` times each attempt's deadline (default: the system clock)."""
    if deployment.provider is ProviderKind.LOCAL:
        from gateway.providers.local import LocalProvider

        return LocalProvider(deployment)
    module, _, name = ADAPTERS[deployment.provider].partition(":")
    adapter: Provider = getattr(importlib.import_module(module), name)(
        deployment, key, transport=transport, clock=clock
    )
    return adapter
