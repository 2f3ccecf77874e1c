"""OpenAI's Batch API (and, through `azure`, Azure OpenAI's global batch).

The wire, as openai-python's `resources/batches.py` and `resources/files.py` send it:
the requests are a JSON Lines file, one `{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}` a line, the body exactly what the chat adapter sends;
it is uploaded to `POST /files` (multipart, `purpose=batch`); `POST /batches` with
`input_file_id`, `endpoint` and `completion_window: "24h"` creates the job;
`GET /batches/{id}` gives its `status` (validating, in_progress, finalizing, cancelling;
completed, expired, cancelled; failed) and `request_counts` (total, completed, failed).
When it is over, `output_file_id` holds the answered lines and `error_file_id` the rest,
each `{"custom_id", "response": {"status_code", "body"} | null, "error": {"code",
"message"} | null}`, read from `GET /files/{id}/content`; a request the window or a
cancellation left unrun carries the code `batch_expired` or `batch_cancelled`.

A job holds at most 50,000 requests in a file of at most 200 MB (OpenAI's Batch guide);
Azure's global batch takes 100,000 in the same 200 MB (Azure OpenAI's batch how-to).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gateway.model import ProviderError, Request
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
from gateway.providers.jsonshape import as_dict, as_int, as_list, as_str, encode
from gateway.providers.openai import (
    OPENAI_BASE_URL,
    chat_body,
    dialect_for,
    parse_completion,
)

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

CHAT = "/v1/chat/completions"
WINDOW = "24h"  # the only completion window the API takes
_STATES = {
    "validating": BatchState.RUNNING,
    "in_progress": BatchState.RUNNING,
    "finalizing": BatchState.RUNNING,
    "cancelling": BatchState.RUNNING,
    "completed": BatchState.ENDED,
    "expired": BatchState.ENDED,
    "cancelled": BatchState.ENDED,
    "failed": BatchState.FAILED,
}
_UNRUN = {"batch_expired": ItemKind.EXPIRED, "batch_cancelled": ItemKind.CANCELED}


class OpenAIBatches:
    endpoint = CHAT  # what `endpoint` and each line's `url` name
    CAPS = Caps(requests=50_000, bytes=200 * 1024 * 1024)

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
        self._http = BatchHttp(self._auth(key), transport=transport, clock=clock)

    # -- what Azure changes ---------------------------------------------------------------

    def _auth(self, key: Secret | None) -> dict[str, str]:
        return {} if key is None else {"authorization": f"Bearer {key.reveal()}"}

    def _url(self, path: str) -> str:
        return (self._deployment.base_url or OPENAI_BASE_URL).rstrip("/") + path

    def _body(self, request: Request) -> bytes:
        base = self._deployment.base_url or OPENAI_BASE_URL
        return chat_body(
            request, model=self._deployment.model, dialect=dialect_for(base), stream=False
        )

    # -- the job --------------------------------------------------------------------------

    def _line(self, e: Entry) -> bytes:
        line = encode({"custom_id": e.custom_id, "method": "POST", "url": self.endpoint})
        return line[:-1] + b',"body":' + self._body(e.request) + b"}\n"  # the body as its last key

    def size(self, entry: Entry) -> int:
        return len(self._line(entry))

    def submit(self, entries: Sequence[Entry], *, name: str) -> Snapshot:
        lines = b"".join(self._line(e) for e in entries)
        uploaded = as_dict(
            self._http.post_file(
                self._url("/files"),
                fields={"purpose": "batch"},
                name=f"{name}.jsonl",
                content=lines,
            )
        )
        file_id = as_str(uploaded.get("id"))
        if not file_id:
            from gateway.providers.failures import malformed

            raise malformed("the file upload's reply names no file id")
        body = {"input_file_id": file_id, "endpoint": self.endpoint, "completion_window": WINDOW}
        return self._snapshot(self._http.post_json(self._url("/batches"), body))

    def look(self, batch_id: str) -> Snapshot:
        from urllib.parse import quote

        return self._snapshot(
            self._http.get_json(self._url(f"/batches/{quote(batch_id, safe='')}"))
        )

    def results(self, snapshot: Snapshot, sent: Sequence[str]) -> Iterator[ItemResult]:
        for file_id in snapshot.outputs:
            yield from self._lines(file_id)

    def close(self) -> None:
        self._http.close()

    def _lines(self, file_id: str) -> Iterator[ItemResult]:
        from urllib.parse import quote

        raw = self._http.get_bytes(self._url(f"/files/{quote(file_id, safe='')}/content"))
        for item in jsonl_rows(raw):
            custom_id = as_str(item.get("custom_id"))
            if custom_id:
                yield self._item(custom_id, item)

    def _item(self, custom_id: str, item: dict[str, object]) -> ItemResult:
        error = as_dict(item.get("error"))
        code = as_str(error.get("code")) or ""
        if code in _UNRUN:
            return ItemResult(custom_id, _UNRUN[code], detail=code)
        response = as_dict(item.get("response"))
        status = as_int(response.get("status_code"))
        if status is None:
            return ItemResult(custom_id, ItemKind.ERRORED, detail=code or "no response")
        body = response.get("body")
        if status != 200:
            from gateway.classify import errors

            failure = errors.classify_response(status, {}, body, now=self._http.clock.wall())
            return ItemResult(custom_id, ItemKind.ERRORED, detail=failure.detail)
        try:
            reply = parse_completion(body, now=self._http.clock.wall())
        except ProviderError as err:
            return ItemResult(custom_id, ItemKind.ERRORED, detail=err.failure.detail)
        return ItemResult(custom_id, ItemKind.SUCCEEDED, reply=reply)

    def _snapshot(self, data: object) -> Snapshot:
        body = as_dict(data)
        status = as_str(body.get("status")) or ""
        counts = as_dict(body.get("request_counts"))
        completed, failed = as_int(counts.get("completed")) or 0, as_int(counts.get("failed")) or 0
        errors = [as_dict(e) for e in as_list(as_dict(body.get("errors")).get("data"))]
        detail = "; ".join(as_str(e.get("message")) or "" for e in errors)
        return Snapshot(
            id=as_str(body.get("id")) or "",
            state=_STATES.get(status, BatchState.RUNNING),
            status=status,
            counts=Counts(as_int(counts.get("total")) or 0, completed, failed),
            detail=detail,
            outputs=tuple(
                f for f in (as_str(body.get(k)) for k in ("output_file_id", "error_file_id")) if f
            ),
        )
