"""A golden set: a team's own questions, each with the articles that answer it, or marked as
one the help centre must hand off. Read here; measured by `gateway.observe.retrieval`.

Two formats, told apart by the file's name: `.jsonl`/`.ndjson` is JSON Lines (one object
a line; blank lines skipped), anything else YAML (a list of mappings, or `{questions:
[...]}`). Each item:

    question     the customer's words (required)
    articles     the paths of the articles that answer it, any one of which counts: as the
                 help centre lists them, or any trailing part (`billing/refunds.md`)
    answerable   false for a question the help centre does not answer (default true);
                 such a question has no `articles`
    note         free text, ignored (JSON Lines has no comments)

Every problem names the file and the line of the item it is in.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gateway.record import record

JSON_LINES = (".jsonl", ".ndjson")
_KEYS = ("question", "articles", "answerable", "note")


@record
class GoldenQuestion:
    text: str
    articles: tuple[str, ...]  # empty for an unanswerable question
    answerable: bool
    line: int  # where the item starts in its file, from 1


class GoldenError(Exception):
    """A golden file that cannot be used. `unreadable`: missing or unreadable (no input),
    else its content is wrong (bad data); the message names the file and line."""

    def __init__(self, message: str, *, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def load_golden(path: Path) -> tuple[GoldenQuestion, ...]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise GoldenError(f"cannot read golden file {path}: {reason}", unreadable=True) from None
    if path.suffix.lower() in JSON_LINES:
        items = _json_lines(text, path)
    else:
        items = _yaml_items(text, path)
    questions = tuple(_item(value, f"{path}:{line}", line) for line, value in items)
    if not questions:
        raise GoldenError(f"{path}: no questions (each item: {{question, articles}})")
    return questions


def _json_lines(text: str, path: Path) -> list[tuple[int, object]]:
    import json

    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise GoldenError(f"{path}:{number}: not a JSON object ({exc.msg})") from None
    return items


def _yaml_items(text: str, path: Path) -> list[tuple[int, object]]:
    """Each item with the line it starts on: composed (nodes keep their marks), then
    each item constructed alone."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise GoldenError(f"{where}: not valid YAML") from None
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode):
        keys = [k.value for k, _ in root.value]
        if keys != ["questions"]:
            raise GoldenError(
                f"{path}:{root.start_mark.line + 1}: expected a list of questions "
                "(or one key, `questions:`, holding it)"
            )
        root = root.value[0][1]
    if not isinstance(root, yaml.SequenceNode):
        raise GoldenError(f"{path}:{root.start_mark.line + 1}: expected a list of questions")
    loader = yaml.SafeLoader("")
    try:
        return [(node.start_mark.line + 1, loader.construct_object(node, deep=True))
                for node in root.value]  # fmt: skip
    finally:
        loader.dispose()


def _item(value: object, where: str, line: int) -> GoldenQuestion:
    if not isinstance(value, Mapping):
        raise GoldenError(f"{where}: expected {{question: ..., articles: [...]}}")
    unknown = sorted(str(key) for key in value if key not in _KEYS)
    if unknown:
        raise GoldenError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    question = value.get("question")
    if not isinstance(question, str) or not question.strip():
        raise GoldenError(f"{where}: `question` must be non-empty text")
    answerable = value.get("answerable", True)
    if not isinstance(answerable, bool):
        raise GoldenError(f"{where}: `answerable` must be true or false")
    articles = value.get("articles", [])
    if isinstance(articles, str):
        articles = [articles]
    if not isinstance(articles, list) or not all(
        isinstance(a, str) and a.strip() for a in articles
    ):
        raise GoldenError(f"{where}: `articles` must be a list of paths")
    if answerable and not articles:
        raise GoldenError(
            f"{where}: no `articles` for an answerable question: list the articles that "
            "answer it, or mark it `answerable: false`"
        )
    if not answerable and articles:
        raise GoldenError(
            f"{where}: `articles` for a question marked `answerable: false`: "
            "an unanswerable question has none"
        )
    paths = tuple(a.strip().replace("\\", "/").strip("/") for a in articles)
    return GoldenQuestion(question.strip(), paths, answerable, line)
