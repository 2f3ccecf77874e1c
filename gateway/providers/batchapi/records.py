"""What every Batch API adapter speaks: the job's state and counts as the provider reports
them, one request's outcome, and the Protocol an adapter fills."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import StrEnum
from typing import Protocol

from gateway.model import Reply, Request
from gateway.record import record


class BatchState(StrEnum):
    """Where a job is, in the provider-neutral words `batch --status` shows."""

    RUNNING = "running"  # validating, queued, in progress, finalizing, cancelling
    ENDED = "ended"  # every request has its outcome: the results can be read
    FAILED = "failed"  # the job as a whole was refused (its input failed validation)

    @property
    def over(self) -> bool:
        return self is not BatchState.RUNNING


class ItemKind(StrEnum):
    """How the provider ended one request of the job."""

    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    EXPIRED = "expired"  # not run within the completion window
    CANCELED = "canceled"  # the job was cancelled before it ran


@record
class Counts:
    """The provider's own counts of the job's requests (None: it does not report that one)."""

    total: int
    succeeded: int = 0
    failed: int = 0  # errored, expired and canceled together

    @property
    def done(self) -> int:
        return self.succeeded + self.failed


@record
class Snapshot:
    """One look at a job: its id, where it is (`state`, and the provider's own word in
    `status`), its counts."""

    id: str
    state: BatchState
    status: str
    counts: Counts
    detail: str = ""  # why a FAILED job failed, as the provider says it (no prompt text)
    # Where its results are once it is over: file ids, a results URL (provider's own words).
    outputs: tuple[str, ...] = ()


@record
class Entry:
    """One request of a job: the id the provider echoes back, and what it asks."""

    custom_id: str
    request: Request


@record
class ItemResult:
    """One request's outcome. `reply` is the model's reply, read by the chat adapter's own
    parser (SUCCEEDED only); `detail` says why it failed, without the prompt."""

    custom_id: str
    kind: ItemKind
    reply: Reply | None = None
    detail: str = ""


@record
class Caps:
    """The most one job of a provider's Batch API may hold: `requests` in number and
    `bytes` of its request (the uploaded file, or the body it is posted in); None: no such
    cap. A bigger backlog is sent as several jobs (`parts.split`)."""

    requests: int | None = None
    bytes: int | None = None


class NoBatchApi(Exception):
    """The deployment's provider has no Batch API (or cannot be given one)."""

    def __init__(self, message: str, *, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


class BatchApi(Protocol):
    """A provider's Batch API. Every call raises only `ProviderError`."""

    caps: Caps  # what one job may hold

    def size(self, entry: Entry) -> int:
        """The bytes `entry` adds to a job's request (its line, with its separator)."""
        ...

    def submit(self, entries: Sequence[Entry], *, name: str) -> Snapshot:
        """Send the job (`name`: its display name, where the provider keeps one)."""
        ...

    def look(self, batch_id: str) -> Snapshot: ...

    def results(self, snapshot: Snapshot, sent: Sequence[str]) -> Iterator[ItemResult]:
        """Every request's outcome of a job that is over; `sent`: the custom ids in the
        order sent (requests it reports nothing for are the caller's to treat as failed)."""
        ...

    def close(self) -> None: ...
