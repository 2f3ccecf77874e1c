"""What an engine's Result means to the script that posts it: `action`, `handoff`,
`citations`. One function per outcome; `stream.AnswerStream` shows a streaming customer
the text these decide.

- An answered reply that hands off (`handoff.handoff_detail`) becomes the handoff
  message, reason `model`.
- Otherwise its markers are checked against the passages the answering deployment was
  sent (`Result.articles`, in the prompt's order): the valid ones kept (or, with
  `answers.citations: none`, all removed), the rest removed and counted.
- An answer that cites nothing is handed off (`uncited`) when `answers.require_citation`
  is on, else posted, ungrounded.
- A refusal or a failure is left as it is: nothing answered (`action` None).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.answers.citations import check
from gateway.answers.handoff import handoff_detail, handoff_message
from gateway.answers.language import ENGLISH
from gateway.answers.phrases import SHIPPED, Phrase
from gateway.answers.urls import public_url
from gateway.config.model import AnswerSettings, CitationStyle
from gateway.model import (
    Action,
    Citation,
    Handoff,
    HandoffReason,
    Request,
    Result,
    Route,
    Source,
    Status,
)
from gateway.record import replace
from prompts import marker

UNCITED_DETAIL = "the answer cites no passage it was sent, and answers.require_citation is on"


def settle(
    result: Result,
    *,
    settings: AnswerSettings,
    product: str,
    roots: Sequence[str] = (),
    url_base: str | None = None,
) -> Result:
    """`result` with what it means for a script; `roots` (the `--articles` paths) and
    `url_base` give the citations their URLs."""
    if result.status is not Status.ANSWERED or result.answer is None:
        return result
    message = handoff_message(settings, product, result.language)
    detail = handoff_detail(result.answer, product)
    if detail is not None:
        return _handed_off(result, message, Handoff(HandoffReason.MODEL, detail))
    sent = result.articles
    checked = check(result.answer, len(sent), keep=settings.citations is CitationStyle.MARKERS)
    citations = tuple(
        citation(n, sent[n - 1], roots=roots, url_base=url_base) for n in checked.cited
    )
    if not citations and settings.require_citation:
        handoff = Handoff(HandoffReason.UNCITED, UNCITED_DETAIL)
        return replace(_handed_off(result, message, handoff), citations_dropped=checked.dropped)
    return replace(
        result,
        answer=checked.text,
        action=Action.ANSWER,
        citations=citations,
        citations_dropped=checked.dropped,
    )


def _handed_off(result: Result, message: str, handoff: Handoff) -> Result:
    return replace(result, answer=message, action=Action.HANDOFF, handoff=handoff)


def citation(n: int, source: Source, *, roots: Sequence[str], url_base: str | None) -> Citation:
    url = public_url(source.path, source.url, roots=roots, url_base=url_base)
    return Citation(n, source.path, source.title, source.heading, url)


def not_covered(
    request: Request, handoff: Handoff, *, settings: AnswerSettings, elapsed_s: float
) -> Result:
    """The handoff of a question the help centre does not cover (`handoff`, as
    `gateway.knowledge.relevance.uncovered` decided for `request`): no deployment was
    asked, nothing was sent (no attempts, no tokens), the customer reads the handoff
    message, in the customer's language (`request.language`). `articles` are the passages
    the decision read."""
    return Result(
        status=Status.ANSWERED,
        answer=handoff_message(settings, request.product, request.language),
        deployment=None,
        provider=None,
        model=None,
        routed=Route.NORMAL,
        input_tokens=0,
        elapsed_s=elapsed_s,
        attempts=(),
        input_tokens_exact=False,
        articles=request.sources,
        turns=len(request.turns),
        turns_left_out=request.turns_left_out,
        turn_tokens=request.turn_tokens,
        language=request.language,
        action=Action.HANDOFF,
        handoff=handoff,
    )


def sources_text(citations: Sequence[Citation], heading: str | None = None) -> str:
    """The "Sources" list the plain answer ends with, under `heading` (None: the English
    one, `phrases`): each cited passage's marker, its article's title and its URL (its
    path when no URL is known). Empty: nothing cited."""
    if not citations:
        return ""
    if heading is None:
        heading = SHIPPED[Phrase.SOURCES][ENGLISH]
    lines = [f"{marker(c.n)} {c.title}: {c.url or c.path}" for c in citations]
    return f"{heading}\n" + "\n".join(lines)
