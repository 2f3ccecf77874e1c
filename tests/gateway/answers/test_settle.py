from __future__ import annotations

from gateway.answers.phrases import SHIPPED, Phrase
from gateway.answers.settle import UNCITED_DETAIL, not_covered, settle, sources_text
from gateway.config import AnswerSettings, CitationStyle
from gateway.model import (
    Action,
    Citation,
    FailureKind,
    Handoff,
    HandoffReason,
    QuestionError,
    Request,
    Result,
    Role,
    Route,
    Source,
    Status,
    Turn,
)
from prompts import not_covered as sentence

PRODUCT = "Acme Cloud"
SENT = (
    Source("kb/account/password.md", "Resetting your password", "Steps", "…", 40, 0, 1,
           url="https://acme.example/reset"),
    Source("kb/billing/refunds.md", "Refunds", "", "…", 30, 1, 0),
    Source("kb/billing/refunds.md", "Refunds", "Annual plans", "…", 30, 1, 2),
)  # fmt: skip


def answered(text: str, status: Status = Status.ANSWERED) -> Result:
    return Result(status, text, "primary", "openai", "m", Route.NORMAL, 10, 0.1, (), articles=SENT)


def test_an_answer_lists_what_it_cites_with_urls_stated_or_joined() -> None:
    result = settle(
        answered("Open Settings [1]. Refunds take 5 days [3][7]."),
        settings=AnswerSettings(),
        product=PRODUCT,
        roots=["kb"],
        url_base="https://help.acme.example",
    )
    assert result.action is Action.ANSWER and result.handoff is None
    assert result.answer == "Open Settings [1]. Refunds take 5 days [3]."
    assert result.citations == (
        Citation(1, "kb/account/password.md", "Resetting your password", "Steps",
                 "https://acme.example/reset"),
        Citation(3, "kb/billing/refunds.md", "Refunds", "Annual plans",
                 "https://help.acme.example/billing/refunds"),
    )  # fmt: skip
    assert result.citations_dropped == 1
    assert result.grounded is True
    assert sources_text(result.citations) == (
        "Sources:\n[1] Resetting your password: https://acme.example/reset\n"
        "[3] Refunds: https://help.acme.example/billing/refunds"
    )


def test_without_a_url_the_sources_list_names_the_path() -> None:
    result = settle(answered("Refunds [2]."), settings=AnswerSettings(), product=PRODUCT)
    assert sources_text(result.citations) == "Sources:\n[2] Refunds: kb/billing/refunds.md"


def test_an_answer_citing_nothing_is_posted_ungrounded_unless_citations_are_required() -> None:
    loose = settle(answered("Open Settings."), settings=AnswerSettings(), product=PRODUCT)
    assert (loose.action, loose.grounded, loose.answer) == (Action.ANSWER, False, "Open Settings.")
    assert sources_text(loose.citations) == ""
    strict = AnswerSettings(require_citation=True, handoff_message="A person will reply.")
    held = settle(answered("Open Settings [9]."), settings=strict, product=PRODUCT)
    assert held.action is Action.HANDOFF
    assert held.handoff == Handoff(HandoffReason.UNCITED, UNCITED_DETAIL)
    assert held.answer == "A person will reply."
    assert held.citations_dropped == 1


def test_a_model_handoff_becomes_the_handoff_message() -> None:
    reply = f"[handoff] the customer asks for a person\n{sentence(PRODUCT)}"
    result = settle(answered(reply), settings=AnswerSettings(), product=PRODUCT)
    assert result.action is Action.HANDOFF
    assert result.handoff == Handoff(HandoffReason.MODEL, "the customer asks for a person")
    assert result.answer == sentence(PRODUCT)
    assert result.status is Status.ANSWERED  # exit 5 says it; the status keeps its meaning


def test_markers_off_strips_the_text_but_keeps_the_citations() -> None:
    settings = AnswerSettings(citations=CitationStyle.NONE)
    result = settle(answered("Open Settings [1]."), settings=settings, product=PRODUCT)
    assert result.answer == "Open Settings."
    assert [c.n for c in result.citations] == [1]


def test_a_refusal_or_a_failure_is_not_an_answer_to_act_on() -> None:
    refused = settle(answered("I can't help.", Status.REFUSED), settings=AnswerSettings(),
                     product=PRODUCT)  # fmt: skip
    assert (refused.action, refused.grounded, refused.answer) == (None, None, "I can't help.")
    failed = Result(Status.FAILED, None, None, None, None, Route.NORMAL, 0, 0.1, (),
                    error=QuestionError(FailureKind.EXHAUSTED, "nothing answered"))  # fmt: skip
    assert settle(failed, settings=AnswerSettings(), product=PRODUCT) == failed


def test_a_question_not_covered_is_handed_off_without_any_attempt() -> None:
    request = Request(
        "system",
        "Can I pay in bitcoin?",
        500,
        product=PRODUCT,
        sources=SENT,
        language="de",
        turns=(Turn(Role.CUSTOMER, "Hallo"),),
        turns_left_out=1,
    )
    handoff = Handoff(HandoffReason.NOT_COVERED, "nothing close")
    result = not_covered(request, handoff, settings=AnswerSettings(), elapsed_s=0.01)
    assert (result.status, result.action, result.handoff) == (
        Status.ANSWERED,
        Action.HANDOFF,
        handoff,
    )
    assert result.attempts == () and result.deployment is None and result.input_tokens == 0
    # In the customer's language: the not-covered sentence as shipped in German.
    assert result.answer == SHIPPED[Phrase.NOT_COVERED]["de"].replace("{product}", PRODUCT)
    assert result.articles == SENT  # what the decision read, for the JSON
    assert (result.language, result.turns, result.turns_left_out) == ("de", 1, 1)
    assert result.handoff.as_json() == {"reason": "not_covered", "detail": "nothing close"}
    configured = AnswerSettings(handoff_message="A person will reply within a day.")
    message = not_covered(request, handoff, settings=configured, elapsed_s=0.01).answer
    assert message == "A person will reply within a day."
