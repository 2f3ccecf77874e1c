"""The Gemini API's batch mode.

The wire, as python-genai's `batches.py` and the REST reference send it:
`POST {root}/models/{model}:batchGenerateContent` with `{"batch": {"display_name",
"input_config": {"requests": {"requests": [{"request", "metadata": {"key"}}]}}}}`, each
`request` exactly the GenerateContentRequest the chat adapter sends; the reply is a
long-running operation named `batches/{id}`, and `GET {root}/batches/{id}` gives it
again: `metadata` holds the batch (`state`: BATCH_STATE_PENDING, _RUNNING, _SUCCEEDED,
_FAILED, _CANCELLED, _EXPIRED; the SDK names them JOB_STATE_*, and both are read;
`batchStats`: requestCount, successfulRequestCount, failedRequestCount,
pendingRequestCount, as int64 strings), and once `done`, `response` holds
`inlinedResponses.inlinedResponses[]` (each `{"response"}` or `{"error": {"code",
"message", "status"}}`, with its `metadata`, in the order sent) or a `responsesFile`
of JSON Lines (`{"key", "response" | "error"}`) at `/download/{version}/{file}:download`.
A response that names no key is matched by its place, as the API keeps the order.

A job whose requests are more than `INLINE_LIMIT` bytes (the API takes 20 MB inline; a
thousand questions with their passages are about that) goes as a file instead: JSON
Lines of `{"key", "request"}`, uploaded with the Files API's resumable protocol
(`POST /upload/{version}/files` with `X-Goog-Upload-Protocol: resumable` and
`-Command: start` gives an `x-goog-upload-url`, which takes the bytes with
`-Command: upload, finalize` and answers the file's `name`), and named in
`input_config.file_name`; its results then come as a `responsesFile`. The API names no
cap on a job's requests; a file holds at most 2 GB (the Files API's own limit).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from gateway.model import ProviderError
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
from gateway.providers.gemini import api_root, generate_body, parse_generate
from gateway.providers.jsonshape import as_dict, as_list, as_str, encode

if TYPE_CHECKING:
    import httpx

    from gateway.config import Deployment
    from gateway.seams import Clock
    from gateway.secrets.key import Secret

_STATES = {
    "PENDING": BatchState.RUNNING,
    "RUNNING": BatchState.RUNNING,
    "SUCCEEDED": BatchState.ENDED,
    "CANCELLED": BatchState.ENDED,
    "EXPIRED": BatchState.ENDED,
    "FAILED": BatchState.FAILED,
}
# A job that ended without running them all: what it left unrun is this.
_UNRUN = {"CANCELLED": ItemKind.CANCELED, "EXPIRED": ItemKind.EXPIRED}


INLINE_LIMIT = 16 * 1024 * 1024  # bytes of requests sent inline; more go as a file


def _state(value: str) -> str:
    return value.removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_")


def _count(value: object) -> int:
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


class GeminiBatches:
    CAPS = Caps(requests=None, bytes=2 * 1024 * 1024 * 1024)

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
        self._root = api_root(deployment.base_url)
        self._model = quote((deployment.model or "").removeprefix("models/"), safe="")
        headers = {} if key is None else {"x-goog-api-key": key.reveal()}
        self._http = BatchHttp(headers, transport=transport, clock=clock)
        self._last: dict[str, object] = {}  # the operation last seen, for its inline results

    def _line(self, e: Entry) -> bytes:
        return encode({"key": e.custom_id, "request": generate_body(e.request)})

    def size(self, entry: Entry) -> int:
        return len(self._line(entry)) + 1  # a line of the file, with its newline

    def submit(self, entries: Sequence[Entry], *, name: str) -> Snapshot:
        lines = [self._line(e) for e in entries]
        config: dict[str, object]
        if sum(len(line) for line in lines) > INLINE_LIMIT:
            config = {"file_name": self._upload(b"".join(line + b"\n" for line in lines), name)}
        else:
            requests = [
                {"request": generate_body(e.request), "metadata": {"key": e.custom_id}}
                for e in entries
            ]
            config = {"requests": {"requests": requests}}
        body = {"batch": {"display_name": name, "input_config": config}}
        url = f"{self._root}/models/{self._model}:batchGenerateContent"
        return self._snapshot(self._http.post_json(url, body))

    def _upload(self, content: bytes, name: str) -> str:
        """`content` as a file, through the resumable upload: its name (`files/...`)."""
        from gateway.providers.failures import malformed

        host, _, version = self._root.rpartition("/")
        start = {
            "x-goog-upload-protocol": "resumable",
            "x-goog-upload-command": "start",
            "x-goog-upload-header-content-length": str(len(content)),
            "x-goog-upload-header-content-type": "application/jsonl",
            "content-type": "application/json",
        }
        meta = encode({"file": {"display_name": name}})
        target = self._http.post_raw(f"{host}/upload/{version}/files", meta, start).get(
            "x-goog-upload-url", ""
        )
        if not target.startswith(host + "/"):  # the key goes to no other host
            raise malformed("the upload's start names no upload address on the API's host")
        done = {"x-goog-upload-offset": "0", "x-goog-upload-command": "upload, finalize"}
        uploaded = as_dict(as_dict(self._http.post_bytes(target, content, done)).get("file"))
        file_name = as_str(uploaded.get("name"))
        if not file_name:
            raise malformed("the upload's reply names no file")
        return file_name

    def look(self, batch_id: str) -> Snapshot:
        name = "/".join(quote(part, safe="") for part in batch_id.split("/"))
        return self._snapshot(self._http.get_json(f"{self._root}/{name}"))

    def results(self, snapshot: Snapshot, sent: Sequence[str]) -> Iterator[ItemResult]:
        operation = self._last if as_str(self._last.get("name")) == snapshot.id else {}
        if not operation:
            self.look(snapshot.id)
            operation = self._last
        response = as_dict(operation.get("response")) or as_dict(
            as_dict(operation.get("metadata")).get("output")
        )
        inlined = response.get("inlinedResponses")
        rows = (
            as_list(as_dict(inlined).get("inlinedResponses"))
            if isinstance(inlined, dict)
            else as_list(inlined)
        )
        if not rows and as_str(response.get("responsesFile")):
            rows = list(self._file(as_str(response.get("responsesFile")) or ""))
        seen: set[str] = set()
        for n, row in enumerate(map(as_dict, rows)):
            key = as_str(as_dict(row.get("metadata")).get("key")) or as_str(row.get("key"))
            custom_id = key or (sent[n] if n < len(sent) else None)
            if custom_id:
                seen.add(custom_id)
                yield self._item(custom_id, row)
        unrun = _UNRUN.get(_state(snapshot.status))
        if unrun is not None:
            yield from (ItemResult(c, unrun, detail=str(unrun)) for c in sent if c not in seen)

    def close(self) -> None:
        self._http.close()

    def _file(self, name: str) -> Iterator[object]:
        host, _, version = self._root.rpartition("/")
        url = f"{host}/download/{version}/{name}:download?alt=media"
        yield from jsonl_rows(self._http.get_bytes(url))

    def _item(self, custom_id: str, row: dict[str, object]) -> ItemResult:
        error = as_dict(row.get("error"))
        if error or "response" not in row:
            detail = ": ".join(
                p for p in (as_str(error.get("status")), as_str(error.get("message"))) if p
            )
            return ItemResult(custom_id, ItemKind.ERRORED, detail=detail or "no response")
        try:
            reply = parse_generate(row.get("response"), now=self._http.clock.wall())
        except ProviderError as err:
            return ItemResult(custom_id, ItemKind.ERRORED, detail=err.failure.detail)
        return ItemResult(custom_id, ItemKind.SUCCEEDED, reply=reply)

    def _snapshot(self, data: object) -> Snapshot:
        operation = as_dict(data)
        self._last = operation
        batch = as_dict(operation.get("metadata")) or operation
        status = as_str(batch.get("state")) or ""
        stats = as_dict(batch.get("batchStats"))
        error = as_dict(operation.get("error"))
        state = _STATES.get(_state(status), BatchState.RUNNING)
        if operation.get("done") is True and state is BatchState.RUNNING:
            state = BatchState.FAILED if error else BatchState.ENDED
        return Snapshot(
            id=as_str(operation.get("name")) or as_str(batch.get("name")) or "",
            state=state,
            status=status,
            counts=Counts(
                _count(stats.get("requestCount")),
                _count(stats.get("successfulRequestCount")),
                _count(stats.get("failedRequestCount")),
            ),
            detail=as_str(error.get("message")) or "",
        )
