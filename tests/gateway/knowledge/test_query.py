"""The search for a chat: the current message weighs most, the customer's earlier
messages and the agent's last reply after it, through the one ranker."""

from __future__ import annotations

from gateway.knowledge.index import MemoryIndex
from gateway.knowledge.query import EARLIER_CUSTOMER, LAST_AGENT, Query
from gateway.knowledge.rank import rank
from gateway.model import Article, Role, Turn

ARTICLES = [
    Article(
        "Resetting your password",
        "account/reset.md",
        "Click Forgot password on the sign-in page. We email you a reset link. "
        "The link works once and expires after 60 minutes.",
    ),
    Article(
        "Invitations",
        "team/invites.md",
        "How long does an invitation link last? It expires after 7 days; resend it from "
        "the Members page.",
    ),
    Article("Invoices", "billing/invoices.md", "Download each invoice as a PDF from Billing."),
]
INDEX = MemoryIndex(ARTICLES)
FOLLOW_UP = "it says the link expired, how long does it last?"
THREAD = (
    Turn(Role.CUSTOMER, "I can't sign in, I forgot my password"),
    Turn(Role.AGENT, "Click Forgot password on the sign-in page and we email you a reset link."),
)


def best(query: str | Query) -> str:
    found = rank(query, INDEX)
    return ARTICLES[found[0].key[0]].path


def test_a_follow_up_finds_the_article_its_chat_is_about() -> None:
    assert best(FOLLOW_UP) == "team/invites.md"  # alone: any link that expires
    assert best(Query.of_chat(FOLLOW_UP, THREAD)) == "account/reset.md"


def test_the_current_message_still_decides_when_it_names_another_topic() -> None:
    assert best(Query.of_chat("and where do I download my invoice?", THREAD)) == (
        "billing/invoices.md"
    )


def test_a_plain_question_ranks_exactly_as_a_query_of_one_part() -> None:
    question = "How do I reset my password?"
    assert rank(question, INDEX) == rank(Query.of(question), INDEX)
    assert rank(question, INDEX) == rank(Query.of_chat(question, ()), INDEX)


def test_a_word_said_earlier_and_now_counts_at_its_highest_weight() -> None:
    weights = Query.of_chat("the reset link for my password", THREAD).weights()
    assert weights["link"] == weights["reset"] == weights["password"] == 1.0
    # The customer's earlier message has as many words as this one: its full weight.
    assert weights["forgot"] == EARLIER_CUSTOMER
    # The agent's reply has twice as many: its weight spread over them.
    assert weights["email"] == LAST_AGENT * 3 / 8


def test_a_follow_up_of_one_word_still_takes_the_chats_subject() -> None:
    weights = Query.of_chat("how?", THREAD).weights()
    assert weights["forgot"] == EARLIER_CUSTOMER  # three words' worth, not zero
    assert best(Query.of_chat("what's the command?", THREAD)) == "account/reset.md"
