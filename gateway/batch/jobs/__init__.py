"""Backlogs through a provider's Batch API (`support-ask batch --provider-batch`): what
was sent is kept so that any machine sharing the state can collect it.

`record` is the job as kept (the batch's id, its deployment, each question's id and
custom id, the input file's path; never a key, never a question's text), `store` where
it is kept (beside the state file, or in the state's Redis), `outcome` how one
request's result becomes the `Result` every record is built from, at the batch price.
"""

from gateway.batch.jobs.outcome import AnsweredVia, batch_result, failed_result
from gateway.batch.jobs.record import JobItem, KeptJob
from gateway.batch.jobs.store import FileJobs, JobStore, RedisJobs, UnreadableJob

__all__ = [
    "AnsweredVia",
    "FileJobs",
    "JobItem",
    "JobStore",
    "KeptJob",
    "RedisJobs",
    "UnreadableJob",
    "batch_result",
    "failed_result",
]
