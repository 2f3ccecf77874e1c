"""Azure OpenAI's global batch: OpenAI's Batch API under the resource endpoint.

The same files, lines and job as `openai` (Azure's REST reference for `Batch - Create`
and `Files - Upload`), with Azure's differences: every path is under
`{endpoint}/openai/` with `?api-version=`, the key goes in `api-key`, the endpoint and
each line's `url` are `/chat/completions`, and a line's `model` is the deployment's name
(a global batch deployment), since no path names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from gateway.providers.azure import DEFAULT_API_VERSION
from gateway.providers.batchapi.openai import OpenAIBatches
from gateway.providers.batchapi.records import Caps
from gateway.providers.openai import OPENAI, chat_body

if TYPE_CHECKING:
    from gateway.model import Request
    from gateway.secrets.key import Secret


class AzureBatches(OpenAIBatches):
    endpoint = "/chat/completions"
    CAPS = Caps(requests=100_000, bytes=200 * 1024 * 1024)

    def _auth(self, key: Secret | None) -> dict[str, str]:
        return {} if key is None else {"api-key": key.reveal()}

    def _url(self, path: str) -> str:
        base = (self._deployment.base_url or "").rstrip("/")
        version = quote(self._deployment.api_version or DEFAULT_API_VERSION, safe="")
        return f"{base}/openai{path}?api-version={version}"

    def _body(self, request: Request) -> bytes:
        return chat_body(request, model=self._deployment.model, dialect=OPENAI, stream=False)
