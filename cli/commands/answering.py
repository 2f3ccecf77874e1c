"""What `ask` and `batch` do around the engine so that each answer means something to a
script: a question the help centre does not cover is handed off before any deployment is
asked (`uncovered`); every reply is settled (`gateway.answers.settle`: its action,
handoff and citations); a stream shows only what the settled answer will hold; the plain
answer ends with its sources; stderr says why a question was handed off.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.answers.stream import AnswerStream
    from gateway.config import Config
    from gateway.knowledge.index import Index
    from gateway.knowledge.query import Query
    from gateway.model import Request, Result


def uncovered(
    config: Config,
    query: str | Query,
    request: Request,
    index: Index | None,
    *,
    started: float | None,
) -> Result | None:
    """The `not_covered` handoff of `request` (its passages chosen for `query` from
    `index`) when the help centre does not cover it, as the config's
    `articles.min_relevance` says; None: ask the deployments. `started`: when the
    question began, on the monotonic clock (None: unknown, elapsed 0)."""
    from gateway.knowledge.relevance import uncovered as decide

    handoff = decide(query, request.sources, index, config.articles.min_relevance)
    if handoff is None:
        return None
    import time

    from gateway.answers.settle import not_covered

    elapsed = 0.0 if started is None else time.monotonic() - started
    return not_covered(request, handoff, settings=config.answers, elapsed_s=elapsed)


def settled(result: Result, config: Config, product: str, articles: Sequence[Path]) -> Result:
    """`result` with its action, handoff and citations (URLs from the `--articles` paths)."""
    from gateway.answers.settle import settle

    return settle(
        result,
        settings=config.answers,
        product=product,
        roots=[str(path) for path in articles],
        url_base=config.articles.url_base,
    )


def answer_stream(config: Config, request: Request) -> AnswerStream:
    """What a streaming customer may see of the reply to `request`, as `settled` decides."""
    from gateway.answers.stream import AnswerStream
    from gateway.config import CitationStyle

    return AnswerStream(
        sent=len(request.sources),
        product=request.product,
        keep_markers=config.answers.citations is CitationStyle.MARKERS,
        require_citation=config.answers.require_citation,
    )


def sources_list(result: Result, config: Config) -> str:
    """The "Sources" list the plain answer ends with ("" for none: nothing cited, a
    handoff, or `answers.citations: none`)."""
    from gateway.config import CitationStyle
    from gateway.model import Action

    if result.action is not Action.ANSWER or config.answers.citations is CitationStyle.NONE:
        return ""
    from gateway.answers.phrases import Phrase, say
    from gateway.answers.settle import sources_text

    heading = say(Phrase.SOURCES, result.language, config.answers)
    return sources_text(result.citations, heading)


def handoff_notice(result: Result) -> str:
    """Stderr's line for a handoff: its reason, and the detail when it is ours (a model's
    own words may repeat the customer's, so they stay in the JSON)."""
    from gateway.model import HandoffReason

    handoff = result.handoff
    assert handoff is not None
    said = "" if handoff.reason is HandoffReason.MODEL else f": {handoff.detail}"
    return f"handed off ({handoff.reason}, exit 5){said}; stdout holds the handoff message"
