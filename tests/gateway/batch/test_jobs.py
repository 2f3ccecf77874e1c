"""A provider batch job as kept: its record round-trips, holds no question text, is found
by id or by the input it was sent from, and a kept file that is not one is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.batch.jobs import FileJobs, JobItem, KeptJob, UnreadableJob
from gateway.model import ProviderKind


def job(batch_id: str, input_path: str, at: float) -> KeptJob:
    items = (JobItem("line-1", "T-1", 1), JobItem("line-2", 7, 2))
    return KeptJob(batch_id, ProviderKind.GEMINI, "primary", input_path, at, items)


def test_a_kept_job_is_read_back_as_it_was_kept_and_found_by_id(tmp_path: Path) -> None:
    jobs = FileJobs(tmp_path / "state.batches")
    kept = job("batches/abc", "/data/in.jsonl", 100.0)
    jobs.put(kept)
    assert jobs.get("batches/abc") == kept  # an id with a slash is one safe file name
    assert jobs.get("batches/other") is None
    assert [p.stat().st_mode & 0o777 for p in jobs.folder.glob("*.json")] == [0o600]


def test_the_latest_job_sent_from_an_input_is_the_one_resumed(tmp_path: Path) -> None:
    jobs = FileJobs(tmp_path / "state.batches")
    jobs.put(job("b-old", "/data/in.jsonl", 100.0))
    jobs.put(job("b-new", "/data/in.jsonl", 200.0))
    jobs.put(job("b-else", "/data/other.jsonl", 300.0))
    latest = jobs.latest("/data/in.jsonl")
    assert latest is not None and latest.batch_id == "b-new"
    assert jobs.latest("/data/none.jsonl") is None


def test_a_kept_file_that_is_not_a_job_is_named_not_crashed_on(tmp_path: Path) -> None:
    jobs = FileJobs(tmp_path / "state.batches")
    jobs.put(job("b-1", "/data/in.jsonl", 1.0))
    (path,) = jobs.folder.glob("*.json")
    path.write_text('{"version": 99}')
    with pytest.raises(UnreadableJob, match="another version"):
        jobs.get("b-1")
    assert jobs.latest("/data/in.jsonl") is None


def test_a_job_of_several_batches_keeps_which_batch_each_question_went_in(
    tmp_path: Path,
) -> None:
    jobs = FileJobs(tmp_path / "state.batches")
    items = (JobItem("line-1", "T-1", 1, 0), JobItem("line-2", 7, 2, 0), JobItem("line-3", 8, 3, 1))
    kept = KeptJob(
        "support-ask-0a1b", ProviderKind.OPENAI, "primary", "/in", 1.0, items, parts=("b1", "b2")
    )
    jobs.put(kept)
    again = jobs.get("support-ask-0a1b")
    assert again == kept and again.batches == ("b1", "b2")
    assert (again.sent_in(0), again.sent_in(1)) == (["line-1", "line-2"], ["line-3"])
    one = job("batch_9", "/in", 1.0)
    assert one.batches == ("batch_9",) and one.sent_in(0) == ["line-1", "line-2"]


def test_a_job_kept_before_the_parts_reads_as_one_batch(tmp_path: Path) -> None:
    old = (
        b'{"version":1,"batch_id":"batch_1","provider":"openai","deployment":"primary",'
        b'"input":"/in","submitted_at":1.0,"items":[["line-1","T-1",1]],"sent_with":{}}'
    )
    kept = KeptJob.from_json(old)
    assert kept.batches == ("batch_1",) and kept.sent_in(0) == ["line-1"]
