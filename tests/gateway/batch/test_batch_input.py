"""A batch's input (JSON Lines or plain text, read line by line) and `--resume`'s reading
of an earlier run's output, with the torn last line a hard kill can leave."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.batch import BadLine, Format, Question, prepare, read_items


def items(text: bytes | str, fmt: Format = Format.AUTO) -> list[object]:
    data = text.encode() if isinstance(text, str) else text
    return list(read_items(data.splitlines(keepends=True), fmt))


# -- plain text ---------------------------------------------------------------------------


def test_plain_text_is_one_question_a_line_and_its_line_number_is_its_id():
    assert items("How do I reset my password?\n  Can I get a refund?  \r\n") == [
        Question(1, 1, "How do I reset my password?"),
        Question(2, 2, "Can I get a refund?"),
    ]


def test_an_empty_line_is_a_bad_line_with_its_number_and_the_batch_goes_on():
    assert items("first?\n\n   \nlast?\n") == [
        Question(1, 1, "first?"),
        BadLine(2, 2, "empty line: no question"),
        BadLine(3, 3, "empty line: no question"),
        Question(4, 4, "last?"),
    ]


def test_a_line_that_is_not_utf8_spoils_only_itself():
    got = items(b"first?\n\xff\xfe broken\nlast?\n")
    assert got[0] == Question(1, 1, "first?")
    assert isinstance(got[1], BadLine) and got[1].line == 2 and "not UTF-8" in got[1].reason
    assert got[2] == Question(3, 3, "last?")


# -- JSON Lines ---------------------------------------------------------------------------


def test_json_lines_take_the_id_question_and_product_and_ignore_other_keys():
    text = (
        '{"id": "T-1", "question": "How do I reset my password?", "ticket": {"x": 1}}\n'
        '{"id": 7, "question": " Can I get a refund? ", "product": "Acme Mail"}\n'
        '{"question": "No id here?"}\n'
    )
    assert items(text) == [
        Question("T-1", 1, "How do I reset my password?"),
        Question(7, 2, "Can I get a refund?", "Acme Mail"),
        Question(3, 3, "No id here?"),  # the line number stands in
    ]


@pytest.mark.parametrize(
    ("line", "ident", "reason"),
    [
        ("not json at all", None, "not JSON"),
        ('["a", "list"]', None, "not a JSON object (a list)"),
        ('{"id": "T-9"}', "T-9", "no question"),
        ('{"id": "T-9", "question": "   "}', "T-9", "empty or not a string"),
        ('{"id": "T-9", "question": 42}', "T-9", "empty or not a string"),
        ('{"id": true, "question": "q?"}', None, '"id" must be a string or an integer'),
        ('{"id": 1.5, "question": "q?"}', None, '"id" must be a string or an integer'),
        ('{"id": "T-9", "question": "q?", "product": 3}', "T-9", '"product" must be'),
        ("", None, "empty line"),
    ],
)
def test_a_bad_json_line_is_a_bad_line_for_its_id_and_number(
    line: str, ident: object, reason: str
) -> None:
    got = items(
        '{"id": "T-1", "question": "ok?"}\n' + line + '\n{"id": "T-3", "question": "ok?"}\n'
    )
    assert got[0] == Question("T-1", 1, "ok?")
    bad = got[1]
    assert isinstance(bad, BadLine), bad
    assert (bad.id, bad.line) == (ident, 2)
    assert reason in bad.reason
    assert got[2] == Question("T-3", 3, "ok?")


def test_auto_decides_from_the_first_line_that_is_not_blank_and_keeps_the_blank_ones():
    got = items('\n{"id": "a", "question": "q?"}\n')
    assert got == [BadLine(None, 1, "empty line: no question"), Question("a", 2, "q?")]


def test_the_format_can_be_forced():
    # A plain-text question that happens to start with a brace.
    assert items("{braces} in my invoice?\n", Format.TEXT) == [
        Question(1, 1, "{braces} in my invoice?")
    ]
    bad = items("plain question?\n", Format.JSONL)[0]
    assert isinstance(bad, BadLine) and "not JSON" in bad.reason


def test_a_byte_order_mark_is_not_part_of_the_first_question():
    assert items("\ufeffHow do I reset my password?\n") == [
        Question(1, 1, "How do I reset my password?")
    ]


def test_the_input_is_read_lazily_one_line_at_a_time():
    pulled: list[int] = []

    def lines():  # type: ignore[no-untyped-def]
        for n in range(1, 1_000_000):
            pulled.append(n)
            yield f"question {n}?\n".encode()

    stream = read_items(lines())
    assert next(stream) == Question(1, 1, "question 1?")
    assert len(pulled) == 1


# -- resume -------------------------------------------------------------------------------


def record(ident: object, status: str) -> str:
    import json

    return json.dumps({"id": ident, "schema_version": 1, "status": status}) + "\n"


def test_resume_counts_answered_and_refused_ids_as_done_and_asks_the_rest_again(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text(
        record("a", "answered")
        + record(2, "refused")
        + record("c", "failed")
        + record("d", "fatal")
        + record("c", "answered")  # a later run answered it: the last word counts
    )
    warnings: list[str] = []
    resumed = prepare(out, warn=warnings.append)
    assert resumed.done == {"a", 2, "c"}
    assert resumed.records == 5 and not resumed.torn and warnings == []


def test_a_torn_last_line_is_cut_off_and_its_question_asked_again(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    whole = record("a", "answered") + record("b", "answered")
    out.write_text(whole + '{"id": "c", "schema_version": 1, "status": "answ')
    warnings: list[str] = []

    resumed = prepare(out, warn=warnings.append)

    assert resumed.done == {"a", "b"} and resumed.torn
    assert out.read_text() == whole  # the file is JSON Lines again, ready to append to
    assert len(warnings) == 1 and "cut short" in warnings[0]
    assert prepare(out, warn=warnings.append).torn is False  # repaired once, for good


def test_a_file_of_one_torn_line_becomes_empty(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "sta')
    assert prepare(out, warn=lambda m: None).done == frozenset()
    assert out.read_bytes() == b""


def test_a_torn_tail_longer_than_one_read_is_cut_at_the_right_place(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    head = record("a", "answered")
    out.write_text(head + '{"id": "b", "answer": "' + "x" * 200_000)
    assert prepare(out, warn=lambda m: None).done == {"a"}
    assert out.read_text() == head


def test_a_line_in_the_middle_that_is_not_json_is_ignored_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text(record("a", "answered") + "edited by hand\n" + record("b", "answered"))
    warnings: list[str] = []
    resumed = prepare(out, warn=warnings.append)
    assert resumed.done == {"a", "b"} and resumed.ignored == 1
    assert warnings == [f"{out}:2: not a JSON object; ignored"]


def test_resume_from_a_file_that_does_not_exist_yet_starts_from_nothing(tmp_path: Path) -> None:
    assert prepare(tmp_path / "new.jsonl", warn=lambda m: None).done == frozenset()
