"""The portable system prompt: loading it, rendering it, and the rules it states.

One prompt serves every deployment (hosted LLMs, small local models and the offline
ranker), so the rules it states live here as data too: the offline deployment answers
within `WORD_LIMIT` and with the `NOT_COVERED` sentence, and an evaluation can check any
answer against `rule_breaks` without re-reading the prompt.

Placeholders are `{{product}}` and `{{articles}}` (spaces inside the braces are allowed).
Any other `{{name}}` in a custom prompt is left exactly as written, because a prompt may
legitimately show braces to the model; `template_warnings` lists such names so the caller
can warn about a likely typo.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.model import Article, Source

WORD_LIMIT = 120
"""The most words an answer may have, as the prompt states it."""

NOT_COVERED = (
    "I could not find that in the {{product}} help centre. "
    "Would you like me to open a support ticket?"
)
"""The reply when the articles do not answer the question; the prompt quotes it verbatim."""

HANDOFF_MARKER = "[handoff]"
"""What a reply begins with when it hands the question to a person, as the prompt asks."""


def marker(number: int) -> str:
    """The citation marker of the `number`-th passage (or whole article) the prompt holds,
    counted from 1 in the order sent: what the prompt shows and what the model cites."""
    return f"[{number}]"


BUNDLED_PROMPT = "support.md"

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_KNOWN = frozenset({"product", "articles"})


class PromptError(Exception):
    """A prompt file that cannot be used; the message names the path and the fix."""

    def __init__(self, message: str, *, path: Path | None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def load_prompt(path: Path | None = None) -> str:
    """The prompt template: the bundled portable prompt (None) or the file at `path`."""
    if path is None:
        return _load_bundled()
    fix = "Fix the `prompt:` path in the config, or set it to null for the bundled prompt."
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise PromptError(f"prompt file not found: {path}. {fix}", path=path) from None
    except IsADirectoryError:
        raise PromptError(f"prompt path is a directory: {path}. {fix}", path=path) from None
    except UnicodeDecodeError:
        raise PromptError(
            f"prompt file is not UTF-8 text: {path}. Save it as UTF-8.", path=path
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PromptError(f"cannot read prompt file {path}: {reason}. {fix}", path=path) from None
    if not text.strip():
        raise PromptError(f"prompt file is empty: {path}. {fix}", path=path)
    return text


def _load_bundled() -> str:
    try:
        try:
            # Beside this file, as every ordinary install has it: importlib.resources would
            # cost every question ~1 ms of imports (its readers, zipfile).
            return Path(__file__).with_name(BUNDLED_PROMPT).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            # Not on disk as a file (imported from a zip, say): the package's loader knows.
            from importlib.resources import files

            return files(__name__).joinpath(BUNDLED_PROMPT).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(
            f"the bundled prompt prompts/{BUNDLED_PROMPT} is missing or unreadable "
            f"({type(exc).__name__}); reinstall support-ask.",
            path=None,
        ) from None


def render(
    template: str,
    *,
    product: str,
    articles: Sequence[Article],
    passages: Sequence[Source] | None = None,
) -> str:
    """The template with `{{product}}` and `{{articles}}` filled in: the articles whole, or
    (`passages` given) the passages chosen from them.

    One pass over the template only: the inserted product name and article text are never
    scanned again, so braces, `{{product}}`, `$1` or backslashes inside them stay as written.
    """
    shown = format_articles(articles) if passages is None else format_passages(passages)
    return _fill(template, {"product": product, "articles": shown})


def _fill(template: str, values: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(replace, template)


def format_articles(articles: Sequence[Article]) -> str:
    """The articles as the prompt shows them: each whole, under its citation marker, title
    and source."""
    if not articles:
        return "(No articles were provided.)"
    blocks = [
        f"{marker(number)} Article: {article.title}\nSource: {article.path}\n\n"
        f"{article.text.strip()}"
        for number, article in enumerate(articles, start=1)
    ]
    return "\n\n".join(blocks)


def format_passages(passages: Sequence[Source]) -> str:
    """Passages as the prompt shows them: grouped by article as given (its title and
    source once), each passage under its citation marker and its heading."""
    if not passages:
        return "(No articles were provided.)"
    blocks: list[str] = []
    current: tuple[int, str] | None = None
    for number, passage in enumerate(passages, start=1):
        if (passage.article, passage.path) != current:
            current = (passage.article, passage.path)
            blocks.append(f"Article: {passage.title}\nSource: {passage.path}")
        text = passage.text.strip()
        shown = f"## {passage.heading}\n\n{text}" if passage.heading else text
        blocks.append(f"{marker(number)} {shown}")
    return "\n\n".join(blocks)


def template_warnings(template: str) -> list[str]:
    """Problems worth a warning in a custom prompt: unknown placeholders, no articles slot."""
    warnings: list[str] = []
    names = [match.group(1) for match in _PLACEHOLDER.finditer(template)]
    unknown = sorted(set(names) - _KNOWN)
    if unknown:
        listed = ", ".join("{{" + name + "}}" for name in unknown)
        warnings.append(
            f"the prompt has unknown placeholders left as written: {listed} "
            "(known: {{product}}, {{articles}})"
        )
    if "articles" not in names:
        warnings.append("the prompt has no {{articles}} placeholder: the model sees no articles")
    return warnings


def not_covered(product: str) -> str:
    """The "not covered" sentence for `product` (a generic one when the product is unknown)."""
    return " ".join(_fill(NOT_COVERED, {"product": product.strip()}).split())


def count_words(text: str) -> int:
    """Words as the word limit counts them: runs of non-space characters."""
    return len(text.split())


_NORMAL_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _normal(text: str) -> str:
    return " ".join(text.translate(_NORMAL_QUOTES).split()).casefold()


def is_not_covered(answer: str, product: str) -> bool:
    """Whether `answer` is the "not covered" sentence, allowing case, spacing and curly quotes."""
    return _normal(answer) == _normal(not_covered(product))


def begins_not_covered(text: str, product: str) -> bool:
    """Whether `text` may be the beginning of the "not covered" sentence (compared as
    `is_not_covered` compares): a stream's first words, before the rest arrives."""
    return _normal(not_covered(product)).startswith(_normal(text))


# Compiled on first use: answering a question never checks its answer, evaluating does.
@functools.cache
def _markdown() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Markdown constructs the prompt forbids, each with the name a report shows."""
    return (
        ("heading", re.compile(r"^ {0,3}#{1,6}\s", re.MULTILINE)),
        ("bullet list", re.compile(r"^\s*[-*+]\s+\S", re.MULTILINE)),
        ("numbered list", re.compile(r"^\s*\d{1,3}[.)]\s+\S", re.MULTILINE)),
        ("bold", re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")),
        ("italics", re.compile(r"(?<![\w*])\*(?![\s*])[^*\n]+(?<!\s)\*(?![\w*])")),
        ("code", re.compile(r"`[^`\n]+`|```")),
        ("link", re.compile(r"!?\[[^\]\n]+\]\([^)\s]+\)")),
        ("table", re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)),
        ("quote", re.compile(r"^\s*>\s", re.MULTILINE)),
    )


@functools.cache
def _ai_names() -> re.Pattern[str]:
    return re.compile(
        r"\b(?:open\s?ai|chat\s?gpt|gpt(?:-?\d[\w.-]*)?|anthropic|claude|gemini|bard|"
        r"llama|mistral|mixtral|copilot|deepmind|cohere)\b",
        re.IGNORECASE,
    )


def rule_breaks(answer: str) -> tuple[str, ...]:
    """The prompt's mechanically checkable rules that `answer` breaks (empty: none).

    Checked: the word limit, plain text (no markdown), and naming no AI model or company.
    Whether the answer sticks to the articles needs a judge, not a pattern.
    """
    breaks: list[str] = []
    words = count_words(answer)
    if words > WORD_LIMIT:
        breaks.append(f"{words} words, over the limit of {WORD_LIMIT}")
    breaks.extend(f"markdown: {name}" for name, pattern in _markdown() if pattern.search(answer))
    named = _ai_names().search(answer)
    if named:
        breaks.append(f"names an AI model or company: {named.group(0)}")
    return tuple(breaks)
