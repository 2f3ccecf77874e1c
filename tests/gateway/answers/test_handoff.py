from __future__ import annotations

import pytest

from gateway.answers.handoff import handoff_detail, handoff_message
from gateway.answers.stream import AnswerStream
from gateway.config import AnswerSettings
from prompts import not_covered

PRODUCT = "Acme Cloud"
SENTENCE = not_covered(PRODUCT)


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        (f"[handoff] nothing about bitcoin\n{SENTENCE}", "nothing about bitcoin"),
        ("[HANDOFF]: customer asks for a person", "customer asks for a person"),
        ("  [handoff]\n" + SENTENCE, "the model handed the question to a person"),
        (SENTENCE.upper(), "the model replied with the prompt's not-covered sentence"),
        ("Go to Settings [1].", None),
        (f"{SENTENCE} But refunds take 5 days [1].", None),
        ("You can ask for a [handoff] any time.", None),
    ],
)  # fmt: skip
def test_a_reply_that_hands_off_and_its_reason(reply: str, detail: str | None) -> None:
    assert handoff_detail(reply, PRODUCT) == detail


def test_a_long_reason_is_cut_short() -> None:
    detail = handoff_detail("[handoff] " + "word " * 100, PRODUCT)
    assert detail is not None and len(detail) == 200 and detail.endswith("\u2026")


def test_the_handoff_message_is_the_configured_one_else_the_prompts_sentence() -> None:
    assert handoff_message(AnswerSettings(), PRODUCT) == SENTENCE
    configured = AnswerSettings(handoff_message="A person will reply soon.")
    assert handoff_message(configured, PRODUCT) == "A person will reply soon."


def stream_of(deltas: list[str], **options: object) -> tuple[list[str], str, bool]:
    stream = AnswerStream(sent=2, product=PRODUCT, **options)  # type: ignore[arg-type]
    shown = [stream.feed(delta) for delta in deltas]
    return shown, stream.finish(), stream.handed_off


@pytest.mark.parametrize(
    "deltas",
    [
        ["[hand", "off] not in the", " articles\n", SENTENCE],
        ["  [", "handoff]", "\n", SENTENCE],
        ["I could not find", " that in the Acme Cloud help centre. Would you", " like me to "
         "open a support ticket?"],
    ],
)  # fmt: skip
def test_a_streamed_handoff_shows_nothing_at_all(deltas: list[str]) -> None:
    shown, rest, handed_off = stream_of(deltas)
    assert shown == [""] * len(deltas) and rest == ""
    assert handed_off


def test_a_streamed_answer_is_held_only_until_it_cannot_be_a_handoff() -> None:
    shown, rest, handed_off = stream_of(["[", "1] says", " open Settings."])
    assert shown == ["", "[1] says", " open Settings."] and rest == ""
    shown, rest, _ = stream_of(["I could ", "reset it [1]", "."])
    assert shown == ["", "I could reset it", " [1]."]  # a run of markers may go on
    assert not handed_off


def test_with_citations_required_nothing_is_shown_before_the_first_citation() -> None:
    shown, rest, _ = stream_of(
        ["Open ", "Settings", " [2]. Click", " Reset."], require_citation=True
    )
    assert shown == ["", "", "Open Settings [2]. Click", " Reset."]
    shown, rest, _ = stream_of(["Open ", "Settings [7]."], require_citation=True)
    assert shown == ["", ""] and rest == ""  # never cited: it becomes a handoff


def test_a_restart_forgets_the_reply_so_far() -> None:
    stream = AnswerStream(sent=2, product=PRODUCT)
    assert stream.feed("[handoff] stalled") == ""
    stream.restart()
    assert stream.feed("Open Settings [1].") == "Open Settings [1]."
