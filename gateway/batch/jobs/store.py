"""Where kept jobs live: beside the state file (`<state>.batches/`, one file a job) on one
machine, or in the state's Redis (`<prefix>:batch:<id>`) for a fleet, so a job sent from
one machine is collected on another."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.batch.jobs.record import KeptJob

if TYPE_CHECKING:
    from gateway.state.redis import RedisStore

# A kept job is a pointer to results the provider deletes after a while (OpenAI keeps
# files 30 days); kept a little longer than that, then forgotten.
KEEP_S = 40 * 24 * 3600


class UnreadableJob(Exception):
    """A kept job that cannot be read (another version's, or a torn or edited file)."""


class JobStore(Protocol):
    def put(self, job: KeptJob) -> None: ...

    def get(self, batch_id: str) -> KeptJob | None:
        """The job kept for `batch_id`; None: none is. Raises UnreadableJob."""
        ...

    def latest(self, input_path: str) -> KeptJob | None:
        """The job sent last from `input_path` (None: none kept here)."""
        ...


def _file_name(batch_id: str) -> str:
    # Ids are the provider's (`batches/123` on Gemini): hashed, so any id is one safe name.
    return hashlib.sha256(batch_id.encode()).hexdigest()[:32] + ".json"


class FileJobs:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, job: KeptJob) -> None:
        from gateway.state.replace import locked, replace_whole

        path = self.folder / _file_name(job.batch_id)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with locked(path):
            replace_whole(path, job.to_json())

    def get(self, batch_id: str) -> KeptJob | None:
        path = self.folder / _file_name(batch_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        return _read(raw, where=str(path))

    def latest(self, input_path: str) -> KeptJob | None:
        jobs: list[KeptJob] = []
        for path in self.folder.glob("*.json") if self.folder.is_dir() else ():
            try:
                job = _read(path.read_bytes(), where=str(path))
            except (UnreadableJob, OSError):
                continue
            if job.input == input_path:
                jobs.append(job)
        return max(jobs, key=lambda j: j.submitted_at, default=None)


class RedisJobs:
    """In the state's Redis, on its connection: a Redis that is down is the store's one
    warning, and then this machine's folder (`local`)."""

    def __init__(self, store: RedisStore, *, prefix: str, local: FileJobs) -> None:
        self._store = store
        self._prefix = prefix
        self._local = local

    def _key(self, batch_id: str) -> str:
        return f"{self._prefix}:batch:{batch_id}"

    def _index(self) -> str:
        return f"{self._prefix}:batches"

    def _client(self) -> Any:
        from gateway.state.redis import trouble

        if self._store.down:
            return None
        try:
            return self._store.client()
        except trouble() as exc:
            self._store.give_up(exc)
            return None

    def put(self, job: KeptJob) -> None:
        from gateway.state.redis import trouble

        client = self._client()
        if client is not None:
            try:
                pipe = client.pipeline()
                pipe.set(self._key(job.batch_id), job.to_json(), ex=KEEP_S)
                pipe.zadd(self._index(), {job.batch_id: job.submitted_at})
                pipe.execute()
                return
            except trouble() as exc:
                self._store.give_up(exc)
        self._local.put(job)

    def get(self, batch_id: str) -> KeptJob | None:
        from gateway.state.redis import trouble

        client = self._client()
        if client is None:
            return self._local.get(batch_id)
        try:
            raw = client.get(self._key(batch_id))
        except trouble() as exc:
            self._store.give_up(exc)
            return self._local.get(batch_id)
        if raw is None:
            return self._local.get(batch_id)
        return _read(raw, where=f"Redis key {self._key(batch_id)}")

    def latest(self, input_path: str) -> KeptJob | None:
        from gateway.state.redis import trouble

        client = self._client()
        if client is None:
            return self._local.latest(input_path)
        try:
            ids = client.zrevrange(self._index(), 0, 200)
        except trouble() as exc:
            self._store.give_up(exc)
            return self._local.latest(input_path)
        for batch_id in ids:
            try:
                job = self.get(batch_id.decode() if isinstance(batch_id, bytes) else str(batch_id))
            except UnreadableJob:
                continue
            if job is not None and job.input == input_path:
                return job
        return self._local.latest(input_path)


def _read(raw: bytes | str, *, where: str) -> KeptJob:
    try:
        return KeptJob.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise UnreadableJob(f"{where} is not a kept batch job ({exc})") from None
