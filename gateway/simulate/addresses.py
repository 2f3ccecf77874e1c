"""Where each simulated deployment lives: one fake address per deployment name.

Each deployment is pointed at its own path under a host that never resolves, so the
transport can tell deployments apart by the first path segment and a request that
somehow escapes the simulation cannot reach anything.
"""

from __future__ import annotations

from urllib.parse import quote

from gateway.config import Deployment
from gateway.model import ProviderKind
from gateway.record import replace

SIM_HOST = "sim.invalid"  # .invalid never resolves (RFC 2606): a leaked request cannot go out
AZURE_API_VERSION = "2024-10-21"


def simulated_deployment(deployment: Deployment) -> Deployment:
    """A copy of `deployment` whose address is its fake server's; `local` is returned as is."""
    if deployment.provider is ProviderKind.LOCAL:
        return deployment
    root = f"https://{SIM_HOST}/{quote(deployment.name, safe='')}"
    if deployment.provider is ProviderKind.AZURE:
        return replace(
            deployment, base_url=root, api_version=deployment.api_version or AZURE_API_VERSION
        )
    # Where the real default address carries a version, the fake does too, so an adapter
    # that appends its usual path lands where it would in production.
    suffix = {ProviderKind.OPENAI: "/v1", ProviderKind.GEMINI: "/v1beta"}.get(
        deployment.provider, ""
    )
    return replace(deployment, base_url=root + suffix)
