"""A fake Anthropic Message Batches API, following the shapes
`gateway.providers.batchapi.anthropic` documents. Its results come in the reverse of the
order sent, since the real API promises no order: only `custom_id` ties them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import httpx

from gateway.simulate.batch.plan import BatchServer, Job, Outcome, as_json, jsonl, last_text

_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
_ROOT = "/v1/messages/batches"


def _error(kind: str, message: str) -> object:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _text(turn: Mapping[str, object]) -> str:
    content = turn.get("content")
    return content if isinstance(content, str) else ""


class AnthropicBatchServer(BatchServer):
    def route(
        self, method: str, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        given = headers.get("x-api-key")
        if not given or (self.key is not None and given != self.key):
            return as_json(401, _error("authentication_error", "invalid x-api-key"))
        if not headers.get("anthropic-version"):
            return as_json(400, _error("invalid_request_error", "anthropic-version is required"))
        path = url.path
        if method == "POST" and path == _ROOT:
            return self._create(body)
        rest = path.removeprefix(_ROOT + "/").split("/") if path.startswith(_ROOT + "/") else []
        job = self.jobs.get(rest[0]) if rest else None
        if method == "GET" and job is not None and len(rest) == 1:
            job.look()
            return as_json(200, self._batch(job, url))
        if method == "GET" and job is not None and rest[1:] == ["results"]:
            if not job.over:
                return as_json(
                    400, _error("invalid_request_error", "the batch is still processing")
                )
            return 200, self._results(job), {"content-type": "application/binary"}
        return as_json(404, _error("not_found_error", f"{method} {path} not found"))

    def _create(self, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        try:
            data = json.loads(body)
        except ValueError:
            return as_json(400, _error("invalid_request_error", "the body is not JSON"))
        requests: list[tuple[str, Mapping[str, object]]] = []
        for n, item in enumerate(data.get("requests") or []):
            custom_id = str(item.get("custom_id", ""))
            params = item.get("params")
            if (
                not _CUSTOM_ID.match(custom_id)
                or any(c == custom_id for c, _ in requests)
                or not isinstance(params, dict)
                or not all(params.get(k) for k in ("model", "max_tokens", "messages"))
            ):
                return as_json(400, _error("invalid_request_error", f"requests.{n} is invalid"))
            requests.append((custom_id, params))
        if not requests or self.plan.rejected:
            return as_json(400, _error("invalid_request_error", "requests: the batch is invalid"))
        beyond = self.beyond_caps(len(requests), len(body))
        if beyond is not None:
            return as_json(413, _error("request_too_large", beyond))
        job = self.new_job(self.new_id("msgbatch_"), requests)
        return as_json(200, self._batch(job, None))

    def _batch(self, job: Job, url: httpx.URL | None) -> dict[str, object]:
        total = len(job.requests)
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        counts["processing"] = total
        results = None
        if job.over and url is not None:
            counts["processing"] = 0
            for n in range(total):
                counts[_COUNTED[self.plan.outcome(n)]] += 1
            results = f"{url.scheme}://{url.netloc.decode()}{_ROOT}/{job.id}/results"
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": "ended" if results else "in_progress",
            "request_counts": counts,
            "results_url": results,
            "created_at": "2026-12-01T00:00:00Z",
            "expires_at": "2026-12-02T00:00:00Z",
            "ended_at": "2026-12-01T01:00:00Z" if results else None,
            "cancel_initiated_at": "2026-12-01T00:30:00Z" if job.cancelled else None,
            "archived_at": None,
        }

    def _results(self, job: Job) -> bytes:
        rows: list[dict[str, object]] = []
        for n, (custom_id, params) in enumerate(job.requests):
            outcome = self.plan.outcome(n)
            result: dict[str, object] = {"type": _COUNTED[outcome]}
            if outcome is Outcome.ANSWER:
                result["message"] = self._message(params)
            elif outcome is Outcome.ERROR:
                result["error"] = _error("api_error", "Internal server error")
            rows.append({"custom_id": custom_id, "result": result})
        return jsonl(rows[::-1])

    def _message(self, params: Mapping[str, object]) -> dict[str, object]:
        text = self.plan.answer(last_text(params.get("messages"), _text))
        return {
            "id": "msg_sim",
            "type": "message",
            "role": "assistant",
            "model": params.get("model"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": len(json.dumps(params)) // 4,
                "output_tokens": len(text) // 4,
            },
        }


_COUNTED = {
    Outcome.ANSWER: "succeeded",
    Outcome.ERROR: "errored",
    Outcome.EXPIRED: "expired",
    Outcome.CANCELED: "canceled",
}
