"""Azure OpenAI: the OpenAI protocol (body, replies, streams, refusals all shared with
`openai.py`), with Azure's address and key header (docs/azure.md).

`model` is the Azure deployment name and goes into the path; `base_url` is the resource
endpoint; `api_version` selects the API. Azure serves OpenAI's own models, reasoning ones
included, so it gets OpenAI's dialect (`max_completion_tokens`, usage in streams).
Azure-only shapes the shared parser already handles: a first stream chunk with
`choices: []` and only `prompt_filter_results`, and finish_reason "content_filter".
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from gateway.providers.openai import OPENAI, Dialect, OpenAIProvider

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.secrets.key import Secret

# The GA version the official SDK documents for the classic deployment path
# (docs/azure.md#azure-request).
DEFAULT_API_VERSION = "2024-10-21"


class AzureProvider(OpenAIProvider):
    def _locate(self, deployment: Deployment) -> tuple[str, Dialect]:
        base = (deployment.base_url or "").rstrip("/")
        name = quote(deployment.model or "", safe="")
        version = quote(deployment.api_version or DEFAULT_API_VERSION, safe="")
        return f"{base}/openai/deployments/{name}/chat/completions?api-version={version}", OPENAI

    def _auth(self, key: Secret | None) -> dict[str, str]:
        return {} if key is None else {"api-key": key.reveal()}
