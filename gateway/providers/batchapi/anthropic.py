"""Anthropic's Message Batches.

The wire, as anthropic-sdk-python's `resources/messages/batches.py` sends it:
`POST /v1/messages/batches` with `{"requests": [{"custom_id", "params"}]}`, each `params`
exactly the Messages body the chat adapter sends (without `stream`); `GET
/v1/messages/batches/{id}` gives `processing_status` (in_progress, canceling, ended) and
`request_counts` (processing, succeeded, errored, canceled, expired); once ended,
`results_url` serves JSON Lines of `{"custom_id", "result": {"type": "succeeded",
"message"} | {"type": "errored", "error": {"type": "error", "error": {"type",
"message"}}} | {"type": "canceled"} | {"type": "expired"}}`, in no particular order.
The results are fetched only from the API's own origin: a `results_url` elsewhere would
be sent the key. A batch holds at most 100,000 requests in a body of at most 256 MB
(Anthropic's batch processing guide).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from gateway.model import ProviderError
from gateway.providers.anthropic import ANTHROPIC_VERSION, base_url, message_body, parse_message
from gateway.providers.batchapi.records import (
    BatchState,
    Caps,
    Counts,
    Entry,
    ItemKind,
    ItemResult,
    Snapshot,
)
from gateway.providers.batchapi.wire import BatchHttp, jsonl_rows
from gateway.providers.jsonshape import as_dict, as_int, as_str

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

_KINDS = {
    "succeeded": ItemKind.SUCCEEDED,
    "errored": ItemKind.ERRORED,
    "canceled": ItemKind.CANCELED,
    "expired": ItemKind.EXPIRED,
}


class AnthropicBatches:
    CAPS = Caps(requests=100_000, bytes=256 * 1024 * 1024)

    def __init__(
        self,
        deployment: Deployment,
        key: Secret | None,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
        caps: Caps | None = None,
    ) -> None:
        self.caps = caps if caps is not None else self.CAPS
        self._deployment = deployment
        self._base = base_url(deployment)
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key.reveal()
        self._http = BatchHttp(headers, transport=transport, clock=clock)

    def _url(self, batch_id: str = "") -> str:
        tail = f"/{quote(batch_id, safe='')}" if batch_id else ""
        return f"{self._base}/v1/messages/batches{tail}"

    def _request(self, e: Entry) -> dict[str, object]:
        return {
            "custom_id": e.custom_id,
            "params": message_body(e.request, model=self._deployment.model),
        }

    def size(self, entry: Entry) -> int:
        from gateway.providers.jsonshape import encode

        return len(encode(self._request(entry))) + 1  # and the comma after it

    def submit(self, entries: Sequence[Entry], *, name: str) -> Snapshot:
        requests = [self._request(e) for e in entries]
        return self._snapshot(self._http.post_json(self._url(), {"requests": requests}))

    def look(self, batch_id: str) -> Snapshot:
        return self._snapshot(self._http.get_json(self._url(batch_id)))

    def results(self, snapshot: Snapshot, sent: Sequence[str]) -> Iterator[ItemResult]:
        url = self._url(snapshot.id) + "/results"
        given = snapshot.outputs[0] if snapshot.outputs else ""
        if given.startswith(self._base + "/"):
            url = given
        for item in jsonl_rows(self._http.get_bytes(url)):
            custom_id = as_str(item.get("custom_id"))
            if custom_id:
                yield self._item(custom_id, as_dict(item.get("result")))

    def close(self) -> None:
        self._http.close()

    def _item(self, custom_id: str, result: dict[str, object]) -> ItemResult:
        kind = _KINDS.get(as_str(result.get("type")) or "", ItemKind.ERRORED)
        if kind is ItemKind.SUCCEEDED:
            try:
                reply = parse_message(result.get("message"), now=self._http.clock.wall())
            except ProviderError as err:
                return ItemResult(custom_id, ItemKind.ERRORED, detail=err.failure.detail)
            return ItemResult(custom_id, kind, reply=reply)
        if kind is ItemKind.ERRORED:
            error = as_dict(as_dict(result.get("error")).get("error"))
            detail = ": ".join(
                part for part in (as_str(error.get("type")), as_str(error.get("message"))) if part
            )
            return ItemResult(custom_id, kind, detail=detail or "errored")
        return ItemResult(custom_id, kind, detail=str(kind))

    def _snapshot(self, data: object) -> Snapshot:
        body = as_dict(data)
        status = as_str(body.get("processing_status")) or ""
        counts = as_dict(body.get("request_counts"))
        number = {k: as_int(counts.get(k)) or 0 for k in (*_KINDS, "processing")}
        failed = number["errored"] + number["canceled"] + number["expired"]
        url = as_str(body.get("results_url"))
        return Snapshot(
            id=as_str(body.get("id")) or "",
            state=BatchState.ENDED if status == "ended" else BatchState.RUNNING,
            status=status,
            counts=Counts(sum(number.values()), number["succeeded"], failed),
            outputs=(url,) if url else (),
        )
