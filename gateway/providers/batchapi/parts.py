"""A backlog bigger than one job of a provider's Batch API holds (`Caps`), sent as several
jobs kept together: how the requests are split, and how the jobs read as one.

The split keeps the input's order: each job takes the next requests while they fit, by
number and by the bytes of its request, so the jobs are as few as the caps allow. A
request that alone is past the bytes cap fits no job; it is left out, for the caller to
ask another way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gateway.providers.batchapi.records import BatchState, Caps, Counts, Entry, Snapshot

# What a job's request holds besides its requests (the JSON around them, a form's fields).
ENVELOPE_BYTES = 4096


def split(
    entries: Sequence[Entry], caps: Caps, size: Callable[[Entry], int]
) -> tuple[list[list[Entry]], list[Entry]]:
    """`entries` as jobs within `caps`, in order; and those too large for any job."""
    room = None if caps.bytes is None else caps.bytes - ENVELOPE_BYTES
    jobs: list[list[Entry]] = []
    too_large: list[Entry] = []
    current: list[Entry] = []
    used = 0
    for entry in entries:
        n = size(entry) if room is not None else 0
        if room is not None and n > room:
            too_large.append(entry)
            continue
        full = caps.requests is not None and len(current) >= caps.requests
        if current and (full or (room is not None and used + n > room)):
            jobs.append(current)
            current, used = [], 0
        current.append(entry)
        used += n
    if current:
        jobs.append(current)
    return jobs, too_large


def combined(job_id: str, snaps: Sequence[Snapshot]) -> Snapshot:
    """The jobs of one backlog as one look: their counts summed, running while any runs,
    failed only when all failed (what one refused is asked again, the others' kept)."""
    if len(snaps) == 1:
        return snaps[0]
    states = {s.state for s in snaps}
    if BatchState.RUNNING in states:
        state = BatchState.RUNNING
    elif BatchState.ENDED in states:
        state = BatchState.ENDED
    else:
        state = BatchState.FAILED
    over = sum(1 for s in snaps if s.state.over)
    statuses = ", ".join(dict.fromkeys(s.status for s in snaps))
    return Snapshot(
        id=job_id,
        state=state,
        status=f"{over} of {len(snaps)} jobs over ({statuses})",
        counts=Counts(
            sum(s.counts.total for s in snaps),
            sum(s.counts.succeeded for s in snaps),
            sum(s.counts.failed for s in snaps),
        ),
        detail="; ".join(f"{s.id}: {s.detail}" for s in snaps if s.detail),
        outputs=tuple(o for s in snaps for o in s.outputs),
    )
