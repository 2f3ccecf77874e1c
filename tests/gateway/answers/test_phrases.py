"""The fixed sentences a customer reads: in their language when the config or the shipped
translations have it, else in the default language; the config's text first."""

from __future__ import annotations

import pytest

from gateway.answers.phrases import (
    PLACEHOLDERS,
    SHIPPED,
    Phrase,
    said,
    say,
    template,
    wording,
)
from gateway.config import AnswerSettings
from gateway.config.model import Translations
from prompts import not_covered

# The support languages a translation ships for, besides English.
SUPPORT_LANGUAGES = ("de", "fr", "es", "it", "nl", "pt")
MAP = Translations((("en", "A person will reply."), ("de", "Ein Mensch antwortet Ihnen.")))


def test_the_english_handoff_sentence_is_the_prompts_own() -> None:
    assert say(Phrase.NOT_COVERED, "en", AnswerSettings(), product="Acme") == not_covered("Acme")
    assert say(Phrase.NOT_COVERED, None, AnswerSettings(), product="") == not_covered("")


@pytest.mark.parametrize("phrase", list(Phrase))
def test_every_phrase_ships_in_the_support_languages_each_its_own(phrase: Phrase) -> None:
    texts = SHIPPED[phrase]
    assert set(SUPPORT_LANGUAGES) <= set(texts)
    assert len(set(texts.values())) == len(texts)  # no language left in English
    for text in texts.values():
        assert all("{" + name + "}" in text for name in PLACEHOLDERS[phrase])


def test_the_customers_language_when_shipped_else_the_default() -> None:
    settings = AnswerSettings(default_language="de")
    german = SHIPPED[Phrase.NOT_COVERED]["de"].replace("{product}", "Acme")
    french = SHIPPED[Phrase.NOT_COVERED]["fr"].replace("{product}", "Acme")
    assert say(Phrase.NOT_COVERED, "fr", settings, product="Acme") == french
    assert say(Phrase.NOT_COVERED, "ja", settings, product="Acme") == german  # none shipped
    assert say(Phrase.NOT_COVERED, None, settings, product="Acme") == german


def test_a_configured_string_is_said_in_every_language() -> None:
    settings = AnswerSettings(handoff_message="A person will reply.")
    for language in ("en", "de", "ja", None):
        assert say(Phrase.NOT_COVERED, language, settings, product="Acme") == (
            "A person will reply."
        )


def test_a_configured_map_gives_its_translation_else_the_default_languages() -> None:
    settings = AnswerSettings(handoff_message=MAP, languages=("en", "de", "fr"))
    assert say(Phrase.NOT_COVERED, "de", settings, product="A") == "Ein Mensch antwortet Ihnen."
    # French is configured nowhere in the map: the team's default-language text, not the
    # shipped French sentence.
    assert say(Phrase.NOT_COVERED, "fr", settings, product="A") == "A person will reply."


def test_a_phrase_the_config_does_not_word_is_said_as_shipped() -> None:
    own = Translations((("en", "From {title}:"),))
    settings = AnswerSettings(phrases=(("from_article", own),))
    assert say(Phrase.FROM_ARTICLE, "en", settings, title="Refunds") == "From Refunds:"
    assert say(Phrase.SOURCES, "nl", settings) == "Bronnen:"


def test_a_request_carries_the_wording_the_offline_deployment_says() -> None:
    carried = wording("de", AnswerSettings(handoff_message=MAP))
    assert said(Phrase.NOT_COVERED, carried, product="A") == "Ein Mensch antwortet Ihnen."
    assert said(Phrase.FROM_ARTICLE, carried, title="Rechnungen") == (
        "Aus dem Artikel \u201eRechnungen\u201c:"
    )
    assert said(Phrase.FROM_ARTICLE, (), title="Refunds") == "From \u201cRefunds\u201d:"


def test_what_fills_a_placeholder_is_never_read_again() -> None:
    text = template(Phrase.FROM_ARTICLE, "en")
    assert said(Phrase.FROM_ARTICLE, (("from_article", text),), title="{product} $1") == (
        "From \u201c{product} $1\u201d:"
    )


def test_a_french_no_break_space_survives_an_empty_product() -> None:
    sentence = say(Phrase.NOT_COVERED, "fr", AnswerSettings(), product="")
    assert "  " not in sentence and sentence.endswith("\u00a0?")
