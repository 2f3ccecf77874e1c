"""The questions of a batch, read one line at a time: JSON Lines or plain text.

JSON Lines: `{"id": ..., "question": ..., "product": ..., "thread": [...]}` per line (`id`
a string or an integer, the line number when absent; `product` optional; `thread` the
chat before the question, as `ask --thread` reads it, whose last customer message is the
question when none is given; other keys are ignored, so a ticket export can be fed as it
is). Plain text: one question per line, its line number is
its id. `Format.AUTO` decides from the first line that is not blank: JSON Lines when it
starts with `{`.

Lines are read as bytes and decoded one by one, so a line that is not UTF-8 spoils only
itself. A line that cannot be asked (not JSON, not an object, no question, empty) becomes
a `BadLine` for its id and line number; the batch goes on. Nothing is held beyond the
line being read: the input is a stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from enum import StrEnum

from gateway.answers.thread import ThreadError, chat_of, turns_of
from gateway.model import Turn
from gateway.record import record

ItemId = str | int


class Format(StrEnum):
    AUTO = "auto"
    JSONL = "jsonl"
    TEXT = "text"


@record
class Question:
    """One question to ask. `product` is the line's own, or None for the batch's;
    `turns` the chat before it (the line's `thread`), oldest first."""

    id: ItemId
    line: int
    text: str
    product: str | None = None
    turns: tuple[Turn, ...] = ()


@record
class BadLine:
    """A line that cannot be asked. `id` is None when the line's own id is unreadable."""

    id: ItemId | None
    line: int
    reason: str


Item = Question | BadLine


def read_items(lines: Iterable[bytes], fmt: Format = Format.AUTO) -> Iterator[Item]:
    """Each input line as a Question or a BadLine, in order, numbered from 1."""
    held: list[tuple[int, bytes]] = []  # blank lines before the format is known
    number = 0
    for number, raw in enumerate(lines, start=1):
        if fmt is Format.AUTO:
            if not raw.strip():
                held.append((number, raw))
                continue
            fmt = Format.JSONL if raw.lstrip().startswith(b"{") else Format.TEXT
            for early, blank in held:
                yield _parse(early, blank, fmt)
            held.clear()
        yield _parse(number, raw, fmt)
    for early, blank in held:  # a file of blank lines only
        yield _parse(early, blank, Format.TEXT)


def _parse(number: int, raw: bytes, fmt: Format) -> Item:
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        return BadLine(None if fmt is Format.JSONL else number, number, f"not UTF-8 ({exc.reason})")
    if fmt is Format.TEXT:
        question = text.strip()
        if not question:
            return BadLine(number, number, "empty line: no question")
        return Question(number, number, question)
    return _parse_json(number, text)


def _parse_json(number: int, text: str) -> Item:
    if not text.strip():
        return BadLine(None, number, "empty line: no question")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return BadLine(None, number, f"not JSON ({exc})")
    if not isinstance(doc, dict):
        return BadLine(None, number, f"not a JSON object (a {type(doc).__name__})")
    ident = doc.get("id", number)
    # bool is an int to Python, and 1.0 == 1: either would make two ids one.
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return BadLine(None, number, 'the "id" must be a string or an integer')
    question = doc.get("question")
    turns: tuple[Turn, ...] = ()
    if doc.get("thread") is not None:
        try:
            chat = chat_of(
                question.strip() if isinstance(question, str) else None, turns_of(doc["thread"])
            )
        except ThreadError as exc:
            return BadLine(ident, number, f'the "thread": {exc.message}')
        question, turns = chat.question, chat.turns
    if not isinstance(question, str) or not question.strip():
        why = "no question" if question is None else 'the "question" is empty or not a string'
        return BadLine(ident, number, why)
    product = doc.get("product")
    if product is not None and (not isinstance(product, str) or not product.strip()):
        return BadLine(ident, number, 'the "product" must be a non-empty string')
    return Question(ident, number, question.strip(), product, turns)
