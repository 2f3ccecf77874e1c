"""Golden files as teams write them (YAML or JSON Lines), and the mistakes they make: each
named with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.observe.golden import GoldenError, GoldenQuestion, load_golden

YAML = """\
# our questions
- question: How do I get a refund?
  articles: [billing/refunds.md]
- question: Where are my invoices?
  articles: billing/invoices.md
  note: one path may be given as text
- question: Can I pay in bitcoin?
  answerable: false
"""


def write(tmp_path: Path, text: str, name: str = "golden.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_yaml_file_reads_each_item_with_its_line(tmp_path: Path) -> None:
    assert load_golden(write(tmp_path, YAML)) == (
        GoldenQuestion("How do I get a refund?", ("billing/refunds.md",), True, 2),
        GoldenQuestion("Where are my invoices?", ("billing/invoices.md",), True, 4),
        GoldenQuestion("Can I pay in bitcoin?", (), False, 7),
    )


def test_a_questions_key_holding_the_list_reads_alike(tmp_path: Path) -> None:
    nested = "questions:\n" + "".join(f"  {line}\n" for line in YAML.splitlines())
    found = load_golden(write(tmp_path, nested))
    assert [q.text for q in found] == [q.text for q in load_golden(write(tmp_path, YAML, "b.yml"))]
    assert [q.line for q in found] == [3, 5, 8]


def test_json_lines_read_alike_with_line_numbers_past_blank_lines(tmp_path: Path) -> None:
    lines = [
        json.dumps({"question": "How do I get a refund?", "articles": ["billing/refunds.md"]}),
        "",
        json.dumps({"question": "Can I pay in bitcoin?", "answerable": False}),
    ]
    found = load_golden(write(tmp_path, "\n".join(lines) + "\n", "golden.jsonl"))
    assert found == (
        GoldenQuestion("How do I get a refund?", ("billing/refunds.md",), True, 1),
        GoldenQuestion("Can I pay in bitcoin?", (), False, 3),
    )


def test_windows_separators_and_slashes_around_a_path_are_one_path(tmp_path: Path) -> None:
    found = load_golden(write(tmp_path, "- {question: q, articles: ['\\billing\\refunds.md/']}\n"))
    assert found[0].articles == ("billing/refunds.md",)


BAD = {
    "no articles": (
        "- question: ok\n  articles: [a.md]\n- question: How do I get a refund?\n",
        "golden.yaml:3: no `articles` for an answerable question",
        "mark it `answerable: false`",
    ),
    "articles on an unanswerable one": (
        "- question: q\n  answerable: false\n  articles: [a.md]\n",
        "golden.yaml:1: `articles` for a question marked `answerable: false`",
        "has none",
    ),
    "misspelt key": (
        "- question: q\n  articles: [a.md]\n- question: r\n  artcles: [a.md]\n",
        "golden.yaml:3: unknown key 'artcles'",
        "known: question, articles, answerable, note",
    ),
    "empty question": ("- question: '  '\n  articles: [a.md]\n", "golden.yaml:1:", "non-empty"),
    "answerable as text": (
        "- question: q\n  answerable: 'no'\n",
        "golden.yaml:1: `answerable` must be true or false",
        "",
    ),
    "a bare string": ("- How do I get a refund?\n", "golden.yaml:1: expected {question", ""),
    "a mapping of the wrong key": ("items:\n  - question: q\n", "golden.yaml:1:", "`questions:`"),
    "broken YAML": ("- question: q\n  articles: [a.md\n", "golden.yaml:3: not valid YAML", ""),
    "nothing in it": ("# no questions yet\n", "golden.yaml: no questions", ""),
    "bad JSON line": (
        '{"question": "q", "articles": ["a.md"]}\n{"question": "r",\n',
        "golden.jsonl:2: not a JSON object",
        "",
    ),
}


@pytest.mark.parametrize(("text", "where", "fix"), BAD.values(), ids=BAD.keys())
def test_a_bad_file_names_its_line_and_the_fix(
    tmp_path: Path, text: str, where: str, fix: str
) -> None:
    name = "golden.jsonl" if "jsonl" in where else "golden.yaml"
    with pytest.raises(GoldenError) as caught:
        load_golden(write(tmp_path, text, name))
    message = str(caught.value)
    assert message.startswith(str(tmp_path / where.split(":")[0])), message
    assert where.split(" ", 1)[0] in message.replace(str(tmp_path) + "/", "")
    assert where.split(" ", 1)[-1] in message and fix in message
    assert not caught.value.unreadable


def test_a_missing_file_is_unreadable_not_bad(tmp_path: Path) -> None:
    with pytest.raises(GoldenError) as caught:
        load_golden(tmp_path / "nope.yaml")
    assert caught.value.unreadable
    assert "cannot read golden file" in str(caught.value)
