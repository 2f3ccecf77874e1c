"""The HTTP calls of the Batch APIs, and THE one place their foreign exceptions become ours.

A job is a handful of plain calls (upload a file, create, look, download), none of them
streamed or raced against an answer's deadline, so this is a small client of its own
rather than the chat adapters' (`gateway.providers.http`, built around one attempt's
deadlines). What it shares with that one: no redirects, no retries (the caller decides
what a failure means), a non-2xx handed to `gateway.classify.errors.classify_response`
and a transport exception to `classify_exception`, and the credentials it sends cut out
of every error's detail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import httpx

from gateway.clock import SystemClock
from gateway.model import ProviderError
from gateway.providers.jsonshape import decode_json, encode
from gateway.record import replace
from gateway.secrets.redactor import Redactor
from gateway.secrets.shapes import secret_header_values

if TYPE_CHECKING:
    from gateway.seams import Clock

# An upload of a big backlog (OpenAI takes up to 200 MB) is slow; a look is not.
TIMEOUT = httpx.Timeout(connect=5.0, read=120.0, write=600.0, pool=60.0)
MAX_RESULTS = 512 * 1024 * 1024  # a results file of 50,000 answers is a few hundred MB at most


def jsonl_rows(raw: bytes) -> Iterator[dict[str, object]]:
    """The objects of a results file, one a line. A torn or foreign line is passed over:
    it names no request, and a request with no line is reported missing."""
    for line in raw.splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


class BatchHttp:
    """One Batch API's connection: `headers` (credentials among them) on every call."""

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._redactor = Redactor(secret_header_values(headers))
        self._client = httpx.Client(
            headers={"user-agent": "support-ask", **headers},
            transport=transport,
            follow_redirects=False,
            timeout=TIMEOUT,
        )

    def __repr__(self) -> str:
        return "BatchHttp()"  # never the headers: that is where the key is

    def close(self) -> None:
        self._client.close()

    def get_json(self, url: str) -> object:
        return decode_json(self._send("GET", url), what="the reply")

    def post_json(self, url: str, body: Mapping[str, object]) -> object:
        raw = self._send(
            "POST", url, content=encode(body), headers={"content-type": "application/json"}
        )
        return decode_json(raw, what="the reply")

    def post_file(
        self, url: str, *, fields: Mapping[str, str], name: str, content: bytes
    ) -> object:
        """A multipart/form-data upload: `fields`, and the file as the `file` part."""
        files = {"file": (name, content, "application/jsonl")}
        return decode_json(
            self._send("POST", url, data=dict(fields), files=files), what="the reply"
        )

    def post_raw(self, url: str, content: bytes, headers: Mapping[str, str]) -> httpx.Headers:
        """A raw POST whose reply's headers are what matters (a resumable upload's start)."""
        return self._exchange("POST", url, content=content, headers=dict(headers))[1]

    def post_bytes(self, url: str, content: bytes, headers: Mapping[str, str]) -> object:
        """A raw POST of `content` whose reply is JSON (a resumable upload's bytes)."""
        raw = self._send("POST", url, content=content, headers=dict(headers))
        return decode_json(raw, what="the reply")

    def get_bytes(self, url: str) -> bytes:
        return self._send("GET", url)

    def _send(self, method: str, url: str, **kwargs: object) -> bytes:
        return self._exchange(method, url, **kwargs)[0]

    def _exchange(self, method: str, url: str, **kwargs: object) -> tuple[bytes, httpx.Headers]:
        from gateway.classify import errors

        try:
            response = self._client.request(method, url, **kwargs)  # type: ignore[arg-type]
            body = response.read()
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise self._scrub(ProviderError(errors.classify_exception(exc))) from None
        if not response.is_success:
            failure = errors.classify_response(
                response.status_code, response.headers, body[:65536], now=self.clock.wall()
            )
            raise self._scrub(ProviderError(failure))
        if len(body) > MAX_RESULTS:
            from gateway.providers.failures import malformed

            raise malformed(f"the reply exceeded {MAX_RESULTS} bytes")
        return body, response.headers

    def _scrub(self, err: ProviderError) -> ProviderError:
        detail = self._redactor.scrub(err.failure.detail)
        if detail == err.failure.detail:
            return err
        return ProviderError(replace(err.failure, detail=detail))
