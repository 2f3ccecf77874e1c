"""A fake OpenAI Batch API, and (`azure=True`) Azure OpenAI's global batch.

Follows the shapes `gateway.providers.batchapi.openai` documents: a multipart upload to
`/files` (`purpose=batch`), `POST /batches`, `GET /batches/{id}`, and the output and
error files at `/files/{id}/content`. Azure's paths are under `/openai/` and need
`?api-version=`, its key is `api-key`, and its lines' `url` is `/chat/completions`.
"""

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
    multipart,
)

_UNRUN = {
    Outcome.EXPIRED: (
        "batch_expired",
        "This request could not be executed before the completion window expired.",
    ),
    Outcome.CANCELED: (
        "batch_cancelled",
        "This request was not executed: the batch was cancelled.",
    ),
}


def _error(status: int, message: str, kind: str, code: str | None = None) -> object:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class OpenAIBatchServer(BatchServer):
    def __init__(
        self,
        plan: BatchPlan | None = None,
        *,
        key: str | None = None,
        azure: bool = False,
        caps: Caps | None = None,
    ) -> None:
        super().__init__(plan, key=key, caps=caps)
        self.azure = azure
        self.files: dict[str, bytes] = {}
        self._root = "/openai" if azure else "/v1"
        self._endpoint = "/chat/completions" if azure else "/v1/chat/completions"

    def route(
        self, method: str, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        if not self._authorised(headers):
            return as_json(
                401,
                _error(
                    401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
                ),
            )
        if self.azure and not url.params.get("api-version"):
            return as_json(404, {"error": {"code": "404", "message": "Resource not found"}})
        path = url.path
        if not path.startswith(self._root + "/"):
            return self._not_found(path)
        rest = path[len(self._root) :].split("/")[1:]
        match method, rest:
            case "POST", ["files"]:
                return self._upload(headers, body)
            case "POST", ["batches"]:
                return self._create(body)
            case "GET", ["batches", batch_id] if batch_id in self.jobs:
                job = self.jobs[batch_id]
                job.look()
                return as_json(200, self._batch(job))
            case "GET", ["files", file_id, "content"] if file_id in self.files:
                return 200, self.files[file_id], {"content-type": "application/octet-stream"}
        return self._not_found(path)

    def _authorised(self, headers: Mapping[str, str]) -> bool:
        given = (
            headers.get("api-key")
            if self.azure
            else headers.get("authorization", "").removeprefix("Bearer ")
        )
        return bool(given) and (self.key is None or given == self.key)

    def _not_found(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        return as_json(404, _error(404, f"Invalid URL (GET {path})", "invalid_request_error"))

    def _upload(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes, dict[str, str]]:
        parts = multipart(headers, body)
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return as_json(
                400, _error(400, "purpose must be batch, with a file", "invalid_request_error")
            )
        file_id = self.new_id("file-")
        self.files[file_id] = parts["file"]
        return as_json(
            200, {"id": file_id, "object": "file", "bytes": len(parts["file"]), "purpose": "batch"}
        )

    def _create(self, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        try:
            data = json.loads(body)
        except ValueError:
            return as_json(
                400, _error(400, "We could not parse the JSON body.", "invalid_request_error")
            )
        content = self.files.get(str(data.get("input_file_id")))
        if content is None:
            return as_json(400, _error(400, "No such file.", "invalid_request_error"))
        if data.get("endpoint") != self._endpoint or data.get("completion_window") != "24h":
            return as_json(
                400,
                _error(400, "endpoint or completion_window is invalid", "invalid_request_error"),
            )
        requests: list[tuple[str, Mapping[str, object]]] = []
        for line in content.splitlines():
            item = json.loads(line)
            if (
                item.get("method") != "POST"
                or item.get("url") != self._endpoint
                or not isinstance(item.get("body"), dict)
                or not item["body"].get("model")
                or any(c == item.get("custom_id") for c, _ in requests)
            ):
                return as_json(
                    400,
                    _error(400, f"line {len(requests) + 1} is invalid", "invalid_request_error"),
                )
            requests.append((str(item["custom_id"]), item["body"]))
        beyond = self.beyond_caps(len(requests), len(content))
        if beyond is not None:
            return as_json(400, _error(400, beyond, "invalid_request_error"))
        job = self.new_job(self.new_id("batch_"), requests)
        job.extra["input_file_id"] = data["input_file_id"]
        return as_json(200, self._batch(job, created=True))

    def _batch(self, job: Job, *, created: bool = False) -> dict[str, object]:
        total = len(job.requests)
        outcomes = [self.plan.outcome(n) for n in range(total)]
        status = "validating" if created else "in_progress"
        counts = {"total": total, "completed": 0, "failed": 0}
        out: dict[str, object] = {"output_file_id": None, "error_file_id": None, "errors": None}
        if job.rejected and not created:
            status = "failed"
            out["errors"] = {
                "object": "list",
                "data": [
                    {
                        "code": "invalid_request",
                        "message": "the input file failed validation",
                        "param": None,
                        "line": 1,
                    }
                ],
            }
        elif job.over and not created:
            status = (
                "cancelled"
                if job.cancelled
                else "expired"
                if Outcome.EXPIRED in outcomes
                else "completed"
            )
            answered = sum(o is Outcome.ANSWER for o in outcomes)
            counts = {"total": total, "completed": answered, "failed": total - answered}
            out.update(self._files(job, outcomes))
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": self._endpoint,
            "input_file_id": job.extra["input_file_id"],
            "completion_window": "24h",
            "status": status,
            "created_at": 1_700_000_000,
            "request_counts": counts,
            "metadata": None,
            **out,
        }

    def _files(self, job: Job, outcomes: list[Outcome]) -> dict[str, object]:
        if "output_file_id" in job.extra:
            return {k: job.extra[k] for k in ("output_file_id", "error_file_id")}
        good: list[dict[str, object]] = []
        bad: list[dict[str, object]] = []
        for n, ((custom_id, body), outcome) in enumerate(zip(job.requests, outcomes, strict=True)):
            row: dict[str, object] = {"id": f"batch_req_{n}", "custom_id": custom_id}
            if outcome is Outcome.ANSWER:
                row.update(
                    response={
                        "status_code": 200,
                        "request_id": f"req_{n}",
                        "body": self._completion(body),
                    },
                    error=None,
                )
                good.append(row)
            elif outcome is Outcome.ERROR:
                error = _error(
                    500, "The server had an error processing your request.", "server_error"
                )
                row.update(
                    response={"status_code": 500, "request_id": f"req_{n}", "body": error},
                    error=None,
                )
                bad.append(row)
            else:
                code, message = _UNRUN[outcome]
                row.update(response=None, error={"code": code, "message": message})
                bad.append(row)
        ids: dict[str, object] = {"output_file_id": None, "error_file_id": None}
        for name, rows in (("output_file_id", good), ("error_file_id", bad)):
            if rows:
                file_id = self.new_id("file-")
                self.files[file_id] = jsonl(rows)
                ids[name] = file_id
        job.extra.update(ids)
        return ids

    def _completion(self, body: Mapping[str, object]) -> dict[str, object]:
        question = last_text(body.get("messages"), lambda m: str(m.get("content") or ""))
        text = self.plan.answer(question)
        messages = body.get("messages")
        prompt = sum(len(str(m)) for m in messages) // 4 if isinstance(messages, list) else 0
        return {
            "id": "chatcmpl-sim",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(text) // 4,
                "total_tokens": prompt + len(text) // 4,
            },
        }
