from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from gateway.answers.handoff import handoff_detail
from gateway.config import Deployment
from gateway.knowledge.load import load_articles
from gateway.knowledge.relevance import DEFAULT_MIN_RELEVANCE as FLOOR
from gateway.knowledge.select import everything
from gateway.model import Article, ProviderKind, Request, Source
from gateway.providers.local import NOT_COVERED_REASON, LocalProvider, best_passage
from prompts import WORD_LIMIT, count_words, not_covered, rule_breaks
from tests.support.paths import EXAMPLES_KB

KB = EXAMPLES_KB
PRODUCT = "Acme Cloud"


@pytest.fixture(scope="module")
def kb() -> tuple[Article, ...]:
    articles, warnings = load_articles([KB])
    assert warnings == []
    return articles


def provider() -> LocalProvider:
    return LocalProvider(
        Deployment(name="local", provider=ProviderKind.LOCAL, context_window=10**6)
    )


def ask(question: str, articles: Sequence[Article], product: str = PRODUCT) -> str:
    request = Request(
        system="(the rendered prompt)",
        question=question,
        max_output_tokens=400,
        articles=tuple(articles),
        product=product,
    )
    return provider().complete(request, timeout=5.0).text


def hands_off(answer: str, product: str = PRODUCT) -> bool:
    """The reply hands off as the prompt asks: the marker and its reason, then the
    not-covered sentence for the customer."""
    return handoff_detail(answer, product) == NOT_COVERED_REASON and answer.endswith(
        "\n" + not_covered(product)
    )


def rank(question: str, articles: Sequence[Article]) -> Source | None:
    """The passage the offline deployment answers from, as the one ranker chose it."""
    return best_passage(Request("", question, 400, tuple(articles), PRODUCT))


def md(title: str, body: str, path: str = "") -> Article:
    return Article(title=title, path=path or f"{title}.md", text=f"# {title}\n\n{body}")


def test_readme_main_command_answers_from_the_password_article(kb: tuple[Article, ...]) -> None:
    request = Request(
        system="", question="How do I reset my password?", max_output_tokens=400, articles=kb
    )
    reply = provider().complete(request, timeout=5.0)
    assert reply.text.startswith("From \u201cResetting your password\u201d: ")
    # The steps of a reset, not the article's introduction or another section.
    assert "Forgot password?" in reply.text
    assert "Send reset link" in reply.text
    assert reply.finish_reason == "stop"
    assert reply.model == "local-bm25"
    assert not reply.refused
    assert rule_breaks(reply.text) == ()


@pytest.mark.parametrize(
    ("question", "title", "phrase"),
    [
        ("How do I turn on two-factor authentication?", "Two-factor", "Scan the QR code"),
        ("I lost my phone and can't log in", "Two-factor", "recovery code"),
        ("How do I delete my account?", "Managing your account", "Delete permanently"),
        ("Where can I download my invoices?", "Billing and invoices", "Download PDF"),
        ("How do I cancel my subscription?", "Changing your plan", "downgrade to the Free plan"),
        ("How do I add someone to my team?", "Team members and roles", "Invite people"),
        ("How do I create an API key?", "API keys", "Create key"),
        ("What are the rate limits?", "API keys", "600 requests per minute"),
        ("Where is my data stored?", "Security and privacy", "Frankfurt"),
        ("Why didn't I get the reset email?", "Resetting your password", "spam"),
        # From the HTML articles: headings survive the reduction to text.
        ("How do I connect Slack?", "Integrations: Slack and Zapier", "Connect to Slack"),
        ("How do I disconnect Slack?", "Integrations: Slack and Zapier", "Disconnect"),
        ("Is Acme Cloud down?", "Service status and outages", "incident"),
        # From the plain-text article: its short lines are headings.
        ("How do I request a refund?", "Refunds", "billing@acmecloud.example"),
    ],
)
def test_the_right_passage_wins(
    kb: tuple[Article, ...], question: str, title: str, phrase: str
) -> None:
    answer = ask(question, kb)
    assert answer.startswith(f"From \u201c{title}")
    assert phrase in answer
    assert rule_breaks(answer) == ()


@pytest.mark.parametrize(
    "question",
    [
        "Can I pay with bitcoin?",
        "What is the weather in Paris?",
        "Do you offer a discount for nonprofits?",
        "How do I?",  # nothing but stopwords
        "",
        "?!",
    ],
)
def test_questions_the_articles_do_not_cover(kb: tuple[Article, ...], question: str) -> None:
    assert hands_off(ask(question, kb))


def test_no_articles_is_not_covered() -> None:
    assert hands_off(ask("How do I reset my password?", []))


def test_without_a_product_the_not_covered_reply_is_generic(kb: tuple[Article, ...]) -> None:
    answer = ask("Can I pay with bitcoin?", kb, product="")
    assert hands_off(answer, product="")
    assert "\nI could not find that in the help centre." in answer


# Coverage, both sides of the threshold. Every paragraph below mentions "plan", one also
# "refund": "plan" is common and weighs little, "refund" is rare and weighs more, and a
# word no article has ("bitcoin", "xero") weighs three times the rarest known word.
THRESHOLD_KB = [
    md("Plans", "Every plan has a monthly price.\n\nYou can change plan at any time."),
    md("Plan limits", "Each plan has a storage limit.\n\nA bigger plan has more storage."),
    md("Refunds", "A refund for your first plan payment is given within 30 days."),
]


def test_a_passage_reaching_the_relevance_floor_answers() -> None:
    match = rank("plan refund", THRESHOLD_KB)
    assert match is not None
    assert match.coverage >= FLOOR
    assert "within 30 days" in ask("plan refund", THRESHOLD_KB)


def test_a_passage_below_the_relevance_floor_does_not_answer() -> None:
    # Each word is in one title and one paragraph: they weigh the same.
    articles = [
        md("Refunds", "A refund is given within 30 days."),
        md("Vouchers", "A voucher is sent by email."),
        md("Gifts", "A gift is wrapped for free."),
    ]
    half = rank("refund voucher", articles)
    assert half is not None and half.coverage == pytest.approx(0.5)
    assert not hands_off(ask("refund voucher", articles))
    third = rank("refund voucher gift", articles)
    assert third is not None and third.coverage == pytest.approx(1 / 3)
    assert third.coverage < FLOOR
    assert hands_off(ask("refund voucher gift", articles))


def test_a_word_no_article_has_outweighs_a_rare_and_a_common_one() -> None:
    """A name the help centre never mentions is what the question is about: refunds through
    Xero are not answered by the refund article."""
    match = rank("refund plan xero", THRESHOLD_KB)
    assert match is not None
    assert match.coverage < FLOOR
    assert hands_off(ask("refund plan xero", THRESHOLD_KB))
    assert ask("refund plan", THRESHOLD_KB).startswith("From \u201cRefunds\u201d")


def test_a_common_word_alone_does_not_cover_a_rare_unknown_subject() -> None:
    match = rank("plan bitcoin", THRESHOLD_KB)
    assert match is not None
    assert match.coverage < FLOOR
    assert hands_off(ask("plan bitcoin", THRESHOLD_KB))


def test_word_forms_match_each_other() -> None:
    articles = [
        md("Exports", "Exporting invoices: open Billing and click Export."),
        md("Other", "Something unrelated about avatars."),
    ]
    assert ask("how do I export my invoice", articles).startswith("From \u201cExports\u201d")
    assert ask("EXPORTED INVOICES?", articles).startswith("From \u201cExports\u201d")


LONG_SENTENCES = " ".join(f"Step {i} tells you to press button number {i} now." for i in range(40))


def test_a_long_passage_gives_its_best_sentences_whole_within_the_limit() -> None:
    answer = ask("press button", [md("Buttons", LONG_SENTENCES)])
    assert count_words(answer) <= WORD_LIMIT
    assert answer.startswith("From \u201cButtons\u201d: Step 0 tells you")
    assert answer.endswith("now.")
    assert answer.count("now.") == 3  # two or three sentences, not the page


def test_one_endless_sentence_is_cut_at_the_limit_with_an_ellipsis() -> None:
    endless = " ".join(["press the button"] * 100)
    answer = ask("press button", [md("Buttons", endless)])
    assert WORD_LIMIT - 2 <= count_words(answer) <= WORD_LIMIT
    assert answer.startswith("From \u201cButtons\u201d: press the button")
    assert answer.endswith("\u2026")


def test_markdown_becomes_plain_text() -> None:
    body = (
        "To **rotate** a `key`, see the [key guide](https://example.com/keys) or the\n"
        "[settings page](/settings):\n\n"
        "1. Open *Settings* and\n   pick API keys\n"
        "2. Click __Rotate__\n"
        "- <b>Store</b> it safely\n\n"
        "| Scope | Meaning |\n|---|---|\n| read | view only |\n\n"
        "```\nacme keys rotate\n```"
    )
    answer = ask("rotate key", [md("API keys", f"## Rotate a key\n\n{body}")])
    assert rule_breaks(answer) == ()
    assert "key guide (https://example.com/keys)" in answer
    assert "settings page:" in answer
    assert "Open Settings and pick API keys. Click Rotate. Store it safely." in answer
    for mark in ("**", "`", "[", "<b>", "|", "##", "1.", "- "):
        assert mark not in answer


def test_streams_word_by_word_and_the_chunks_make_the_answer(kb: tuple[Article, ...]) -> None:
    chunks: list[str] = []
    request = Request(
        system="", question="How do I create an API key?", max_output_tokens=400, articles=kb
    )
    reply = provider().complete(request, timeout=5.0, on_text=chunks.append)
    assert "".join(chunks) == reply.text
    assert len(chunks) == count_words(reply.text)
    assert all(re.fullmatch(r"\S+\s*", chunk) for chunk in chunks)


def test_streams_the_not_covered_reply_too() -> None:
    chunks: list[str] = []
    request = Request(system="", question="bitcoin", max_output_tokens=400, product=PRODUCT)
    reply = provider().complete(request, timeout=5.0, on_text=chunks.append)
    assert "".join(chunks) == reply.text
    assert hands_off(reply.text)


def test_cites_the_passage_it_answers_from_by_its_place_among_those_sent() -> None:
    chosen = (
        Source("kb/plans.md", "Plans", "", "Every plan has a monthly price.", 8, 0, 0, 1.0, 0.4),
        Source("kb/refunds.md", "Refunds", "", "A refund takes 30 days.", 6, 2, 0, 3.0, 0.9),
    )
    request = Request("", "refund", 400, product=PRODUCT, sources=chosen, ranked=True)
    answer = provider().complete(request, timeout=5.0).text
    assert answer == "From \u201cRefunds\u201d: A refund takes 30 days. [2]"


def test_cites_a_whole_article_by_its_place_in_the_set(kb: tuple[Article, ...]) -> None:
    request = Request(
        "", "How do I reset my password?", 400, articles=kb, sources=everything(kb).sources
    )
    answer = provider().complete(request, timeout=5.0).text
    place = next(n for n, a in enumerate(kb, 1) if a.title == "Resetting your password")
    assert answer.endswith(f" [{place}]")
    assert count_words(answer) <= WORD_LIMIT


def test_answers_are_deterministic_and_ties_go_to_the_earlier_article() -> None:
    body = "Open Settings, then Security, and click Reset password."
    first, second = md("Copy A", body), md("Copy B", body)
    assert ask("reset password", [first, second]).startswith("From \u201cCopy A\u201d")
    assert ask("reset password", [second, first]).startswith("From \u201cCopy B\u201d")
    answers = {ask("reset password", [first, second]) for _ in range(5)}
    assert len(answers) == 1


def test_the_best_section_wins_over_an_introduction_repeating_the_words() -> None:
    article = md(
        "Passwords",
        "Your password protects your account. You can reset your password at any time.\n\n"
        "## Reset your password\n\n"
        "Click Forgot password on the sign-in page and follow the link we email you.",
    )
    answer = ask("How do I reset my password?", [article])
    assert "Click Forgot password" in answer
    assert "protects your account" not in answer


def test_text_that_looks_like_a_template_is_answered_as_written() -> None:
    body = "Type {{product}} and $1 and C:\\new into the {export} box."
    answer = ask("export box", [md("Odd", body)])
    assert answer == f"From \u201cOdd\u201d: {body}"


def test_letters_that_lowercase_to_two_characters_do_not_shift_passages() -> None:
    # "İ".lower() is two characters: positions must still point at the right passage.
    article = md(
        "Offices",
        "## Turkey\n\n"
        + "İstanbul İzmir " * 40
        + "\n\n## Invoices\n\nInvoices are emailed monthly.",
    )
    answer = ask("When are invoices emailed?", [article])
    assert answer == "From \u201cOffices\u201d: Invoices are emailed monthly."


def test_never_answers_from_a_navigation_page() -> None:
    entries = "\n".join(f"- [Refund step {n}](refund-{n}.md)" for n in range(30))
    site_map = Article("Site map", "sitemap.md", f"# Site map\n\n{entries}\n")
    refunds = md("Refunds", "Write to billing within 30 days to get a refund of the charge.")
    from gateway.knowledge.load import parse

    parsed, _ = parse(site_map.path, site_map.text.encode())
    assert parsed is not None
    answer = ask("How do I get a refund of the charge?", [parsed, refunds])
    assert "Refunds" in answer and "Site map" not in answer
    assert hands_off(ask("Which refund step?", [parsed, refunds]))
