"""A fake Gemini batch mode, following the shapes `gateway.providers.batchapi.gemini`
documents. Its inlined responses carry no `metadata` (users report the real API may
leave it out), so a client must match them by their place, as the API keeps the order.
A job the window outran ends EXPIRED with no results at all, as the API documents; a
cancelled one ends CANCELLED with the responses of what it ran."""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx

from gateway.providers.batchapi.records import Caps
from gateway.simulate.batch.plan import (
    BatchPlan,
    BatchServer,
    Job,
    Outcome,
    as_json,
    jsonl,
    last_text,
)

_ROOT = "/v1beta"
_BATCH_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
_OUTPUT_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"


def _error(code: int, status: str, message: str) -> object:
    return {"error": {"code": code, "message": message, "status": status}}


def _text(turn: Mapping[str, object]) -> str:
    parts = turn.get("parts")
    if isinstance(parts, list):
        return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return ""


class GeminiBatchServer(BatchServer):
    """`files=True`: the results come as a responses file (JSON Lines, each with its
    `key`), as for a job sent as a file, instead of inlined."""

    def __init__(
        self,
        plan: BatchPlan | None = None,
        *,
        key: str | None = None,
        files: bool = False,
        caps: Caps | None = None,
    ) -> None:
        super().__init__(plan, key=key, caps=caps)
        self.files = files
        self.downloads: dict[str, bytes] = {}
        self.uploads: dict[str, bytes] = {}  # by file name: what was uploaded
        self._sessions: set[str] = set()

    def route(
        self, method: str, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        given = headers.get("x-goog-api-key") or url.params.get("key")
        if not given or (self.key is not None and given != self.key):
            return as_json(
                400,
                _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
            )
        path = url.path
        if method == "POST" and path == f"/upload{_ROOT}/files":
            return self._upload(url, headers, body)
        if (
            method == "POST"
            and path.startswith(f"{_ROOT}/models/")
            and path.endswith(":batchGenerateContent")
        ):
            model = path.removeprefix(f"{_ROOT}/").removesuffix(":batchGenerateContent")
            return self._create(model, body)
        download = path.removeprefix(f"/download{_ROOT}/").removesuffix(":download")
        if method == "GET" and download in self.downloads and url.params.get("alt") == "media":
            return 200, self.downloads[download], {"content-type": "application/octet-stream"}
        job = self.jobs.get(path.removeprefix(f"{_ROOT}/"))
        if method == "GET" and job is not None:
            job.look()
            return as_json(200, self._operation(job))
        return as_json(404, _error(404, "NOT_FOUND", f"{method} {path} is not found"))

    def _upload(
        self, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        """The Files API's resumable upload: a start gives an upload address, which takes
        the bytes and finalizes the file."""
        command = headers.get("x-goog-upload-command", "")
        if command == "start" and headers.get("x-goog-upload-protocol") == "resumable":
            session = self.new_id("up")
            self._sessions.add(session)
            at = f"{url.scheme}://{url.netloc.decode()}{url.path}?upload_id={session}"
            return 200, b"", {"x-goog-upload-url": at, "x-goog-upload-status": "active"}
        session = url.params.get("upload_id", "")
        if session in self._sessions and command == "upload, finalize":
            self._sessions.discard(session)
            name = f"files/{session}"
            self.uploads[name] = body
            return as_json(200, {"file": {"name": name, "sizeBytes": str(len(body))}})
        return as_json(400, _error(400, "INVALID_ARGUMENT", "not a resumable upload"))

    def _rows(self, config: Mapping[str, object]) -> list[object]:
        """The requests of a job: inlined, or the lines of an uploaded file."""
        name = config.get("file_name")
        if isinstance(name, str):
            lines = self.uploads[name].splitlines()
            return [
                {"request": r.get("request"), "metadata": {"key": r.get("key")}}
                for r in map(json.loads, lines)
            ]
        return config["requests"]["requests"]  # type: ignore[index,no-any-return]

    def _create(self, model: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        try:
            batch = json.loads(body)["batch"]
            rows = self._rows(batch["input_config"])
        except (ValueError, KeyError, TypeError):
            return as_json(
                400, _error(400, "INVALID_ARGUMENT", "batch.input_config.requests is required")
            )
        requests: list[tuple[str, Mapping[str, object]]] = []
        for n, given in enumerate(rows):
            row = given if isinstance(given, dict) else {}
            request = row.get("request")
            if not isinstance(request, dict) or not request.get("contents"):
                return as_json(
                    400,
                    _error(400, "INVALID_ARGUMENT", f"requests[{n}].request.contents is required"),
                )
            metadata = row.get("metadata")
            key = metadata.get("key", str(n)) if isinstance(metadata, dict) else str(n)
            requests.append((str(key), request))
        if not requests:
            return as_json(400, _error(400, "INVALID_ARGUMENT", "the batch holds no requests"))
        name = batch["input_config"].get("file_name")
        size = len(self.uploads[name]) if isinstance(name, str) else len(body)
        beyond = self.beyond_caps(len(requests), size)
        if beyond is not None:
            return as_json(400, _error(400, "INVALID_ARGUMENT", beyond))
        job = self.new_job(self.new_id("batches/"), requests)
        job.extra.update(
            model=model,
            display_name=batch.get("display_name", ""),
            from_file="file_name" in batch["input_config"],
        )
        return as_json(200, self._operation(job, created=True))

    def _operation(self, job: Job, *, created: bool = False) -> dict[str, object]:
        total = len(job.requests)
        outcomes = [self.plan.outcome(n) for n in range(total)]
        stats: dict[str, str] = {"requestCount": str(total), "pendingRequestCount": str(total)}
        state, done = "BATCH_STATE_PENDING" if created else "BATCH_STATE_RUNNING", False
        operation: dict[str, object] = {"name": job.id}
        if job.over and not created:
            done = True
            if job.rejected:
                state = "BATCH_STATE_FAILED"
                operation["error"] = {"code": 3, "message": "the batch's input is invalid"}
            elif Outcome.EXPIRED in outcomes:
                state = "BATCH_STATE_EXPIRED"
            else:
                state = "BATCH_STATE_CANCELLED" if job.cancelled else "BATCH_STATE_SUCCEEDED"
                rows = [
                    self._row(body, o)
                    for (_, body), o in zip(job.requests, outcomes, strict=True)
                    if o is not Outcome.CANCELED
                ]
                operation["response"] = self._output(job, rows)
                good = sum(o is Outcome.ANSWER for o in outcomes)
                stats = {
                    "requestCount": str(total),
                    "successfulRequestCount": str(good),
                    "failedRequestCount": str(len(rows) - good),
                }
        operation["metadata"] = {
            "@type": _BATCH_TYPE,
            "name": job.id,
            "model": job.extra["model"],
            "displayName": job.extra["display_name"],
            "state": state,
            "batchStats": stats,
        }
        operation["done"] = done
        return operation

    def _output(self, job: Job, rows: list[dict[str, object]]) -> dict[str, object]:
        if not (self.files or job.extra["from_file"]):  # a file's job answers in a file
            return {"@type": _OUTPUT_TYPE, "inlinedResponses": {"inlinedResponses": rows}}
        name = f"files/{job.id.removeprefix('batches/')}-out"
        keyed = [
            {"key": custom_id, **row}
            for (custom_id, _), row in zip(job.requests, rows, strict=False)
        ]
        self.downloads[name] = jsonl(keyed[::-1])  # keyed, so in any order
        return {"@type": _OUTPUT_TYPE, "responsesFile": name}

    def _row(self, request: Mapping[str, object], outcome: Outcome) -> dict[str, object]:
        if outcome is Outcome.ERROR:
            return _error(500, "INTERNAL", "Internal error encountered.")  # type: ignore[return-value]
        text = self.plan.answer(last_text(request.get("contents"), _text))
        prompt = len(json.dumps(request)) // 4
        response = {
            "candidates": [
                {
                    "content": {"parts": [{"text": text}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": len(text) // 4,
                "totalTokenCount": prompt + len(text) // 4,
            },
            "modelVersion": "gemini-sim",
        }
        return {"response": response}
