"""A backlog past what one of a provider's batches holds is split into as few batches as
its caps allow, in the input's order; the batches read as one job."""

from __future__ import annotations

from gateway.model import Request
from gateway.providers.batchapi import BatchState, Caps, Counts, Entry, Snapshot
from gateway.providers.batchapi.parts import ENVELOPE_BYTES, combined, split

SIZES: dict[str, int] = {}


def entries(*sizes: int) -> list[Entry]:
    """Requests of these sizes in bytes, as their batch's request holds them."""
    out = [Entry(f"line-{n}", Request("system", "question", 100)) for n in range(len(sizes))]
    SIZES.update({e.custom_id: n for e, n in zip(out, sizes, strict=True)})
    return out


def size(entry: Entry) -> int:
    return SIZES[entry.custom_id]


def ids(parts: list[list[Entry]]) -> list[list[str]]:
    return [[e.custom_id for e in part] for part in parts]


def test_a_backlog_within_the_caps_is_one_batch() -> None:
    parts, too_large = split(entries(10, 10, 10), Caps(requests=3, bytes=ENVELOPE_BYTES + 30), size)
    assert ids(parts) == [["line-0", "line-1", "line-2"]] and too_large == []


def test_the_number_of_requests_splits_in_order() -> None:
    parts, _ = split(entries(1, 1, 1, 1, 1), Caps(requests=2), size)
    assert ids(parts) == [["line-0", "line-1"], ["line-2", "line-3"], ["line-4"]]


def test_the_bytes_split_and_a_request_too_large_alone_is_left_out() -> None:
    room = ENVELOPE_BYTES + 100
    parts, too_large = split(entries(60, 30, 200, 50, 10), Caps(bytes=room), size)
    assert ids(parts) == [["line-0", "line-1"], ["line-3", "line-4"]]
    assert [e.custom_id for e in too_large] == ["line-2"]
    assert all(sum(map(size, part)) + ENVELOPE_BYTES <= room for part in parts)


def look(batch_id: str, state: BatchState, done: int, total: int, detail: str = "") -> Snapshot:
    return Snapshot(batch_id, state, str(state), Counts(total, done, 0), detail)


def test_several_batches_read_as_one_job_over_when_every_one_is() -> None:
    running = combined(
        "job", [look("b1", BatchState.ENDED, 2, 2), look("b2", BatchState.RUNNING, 0, 1)]
    )
    assert (running.id, running.state, running.counts) == ("job", BatchState.RUNNING, Counts(3, 2))
    assert running.status.startswith("1 of 2 jobs over")
    one_refused = combined(
        "job", [look("b1", BatchState.ENDED, 2, 2), look("b2", BatchState.FAILED, 0, 1, "bad")]
    )
    assert one_refused.state is BatchState.ENDED and one_refused.detail == "b2: bad"
    alone = look("b1", BatchState.RUNNING, 0, 2)
    assert combined("b1", [alone]) is alone
