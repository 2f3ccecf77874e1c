from __future__ import annotations

import random

import pytest

from gateway.answers.citations import check
from gateway.answers.stream import AnswerStream


def test_markers_for_passages_sent_are_kept_in_the_order_first_cited() -> None:
    checked = check("Open Settings [2]. Click Reset [1]. Then sign in again [2].", 3)
    assert checked.text == "Open Settings [2]. Click Reset [1]. Then sign in again [2]."
    assert checked.cited == (2, 1)
    assert checked.dropped == 0


@pytest.mark.parametrize(
    ("answer", "text", "cited", "dropped"),
    [
        ("Refunds take 5 days [4].", "Refunds take 5 days.", (), 1),
        ("Refunds take 5 days [0].", "Refunds take 5 days.", (), 1),
        ("Refunds take 5 days [1, 4].", "Refunds take 5 days [1].", (1,), 1),
        ("Refunds take 5 days [1,2].", "Refunds take 5 days [1,2].", (1, 2), 0),
        ("Refunds [9][2] take 5 days.", "Refunds [2] take 5 days.", (2,), 1),
        ("Press [Save] then [OK].", "Press [Save] then [OK].", (), 0),
    ],
)
def test_a_marker_for_a_passage_not_sent_is_removed_and_counted(
    answer: str, text: str, cited: tuple[int, ...], dropped: int
) -> None:
    checked = check(answer, 3)
    assert (checked.text, checked.cited, checked.dropped) == (text, cited, dropped)


def test_with_markers_off_every_marker_goes_but_the_valid_ones_still_count_as_cited() -> None:
    checked = check("Open Settings [2]. Click Reset [7].", 3, keep=False)
    assert checked.text == "Open Settings. Click Reset."
    assert (checked.cited, checked.dropped) == ((2,), 1)


ANSWER = (
    "Open Settings [1]. Then  click [2, 9] and [9].\nDone [3][1]. Press [9][2] [x] or "
    "[12, 1] and [1, 2, 3, 1, 2, 3, 1, 2] [4"
)


@pytest.mark.parametrize("seed", range(40))
def test_a_stream_cut_anywhere_shows_exactly_the_checked_whole_answer(seed: int) -> None:
    chooser = random.Random(seed)
    cuts = sorted(chooser.sample(range(1, len(ANSWER)), chooser.randint(1, 25)))
    pieces = [ANSWER[a:b] for a, b in zip([0, *cuts], [*cuts, len(ANSWER)], strict=True)]
    for keep in (True, False):
        stream = AnswerStream(sent=3, product="Acme", keep_markers=keep)
        shown = "".join(stream.feed(piece) for piece in pieces) + stream.finish()
        assert shown == check(ANSWER, 3, keep=keep).text


def test_a_marker_cut_across_two_deltas_waits_for_its_bracket() -> None:
    stream = AnswerStream(sent=2, product="Acme")
    assert stream.feed("Open Settings") == "Open Settings"
    assert stream.feed(" [") == ""
    assert stream.feed("1") == ""
    assert stream.feed("]") == ""  # the next marker of a run may follow
    assert stream.feed(". Then") == " [1]. Then"
    assert stream.feed(" [1") == ""
    assert stream.feed("3]. Done.") == ". Done."  # [13] names no passage sent
    assert stream.finish() == ""


def test_a_stream_checks_markers_against_the_request_actually_sent() -> None:
    """Compacted for a smaller window, the attempt was sent one passage of three: [2] and
    [3] were not in front of it, so they are dropped as they come, as `check` drops them
    from the whole reply."""
    stream = AnswerStream(sent=3, product="Acme")
    stream.sending(1)
    reply = "Open Settings [1]. Then Billing [2][3]."
    shown = (
        "".join(stream.feed(piece) for piece in ("Open Settings [1]. ", "Then Billing [2", "][3]."))
        + stream.finish()
    )
    assert shown == check(reply, 1).text == "Open Settings [1]. Then Billing."
