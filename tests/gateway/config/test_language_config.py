"""`answers.languages`, `answers.default_language`, a handoff message by language and the
offline phrases as teams write them; every mistake named with its line, key and fix."""

from __future__ import annotations

import pytest

from gateway.config import AnswerSettings, ConfigError, load_default_config
from gateway.config.model import Translations
from gateway.config.validate import load_config_text

BASE = """\
product: Acme
deployments:
  - {name: local, provider: local}
"""


def load(answers: str) -> AnswerSettings:
    return load_config_text(BASE + answers, "team.yaml").answers


def problems(answers: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(answers)
    return str(caught.value).splitlines()


def test_without_a_word_any_language_and_english_by_default() -> None:
    assert load("") == AnswerSettings(languages=(), default_language="en")
    assert load_default_config().answers.default_language == "en"


def test_a_team_of_two_languages_defaults_to_the_first_listed() -> None:
    assert load("answers:\n  languages: [de, en]\n").default_language == "de"
    settings = load("answers:\n  languages: [DE, en]\n  default_language: en\n")
    assert settings.languages == ("de", "en") and settings.default_language == "en"


def test_a_handoff_message_as_one_string_or_a_map_by_language() -> None:
    assert load("answers: {handoff_message: '  A person\n  will reply. '}\n").handoff_message == (
        "A person will reply."
    )
    settings = load(
        "answers:\n"
        "  languages: [en, de, no]\n"  # `no`: Norwegian, never YAML's false
        "  handoff_message:\n"
        "    en: A person will reply.\n"
        "    de: Ein Mensch antwortet Ihnen.\n"
        "    no: En person svarer deg.\n"
    )
    assert settings.languages == ("en", "de", "no")
    assert settings.handoff_message == Translations(
        (
            ("en", "A person will reply."),
            ("de", "Ein Mensch antwortet Ihnen."),
            ("no", "En person svarer deg."),
        )
    )


def test_the_offline_phrases_worded_by_the_team() -> None:
    settings = load(
        "answers:\n"
        "  phrases:\n"
        "    from_article: {en: 'See {title}:', de: 'Siehe {title}:'}\n"
        "    sources: Links\n"
    )
    assert settings.phrases == (
        ("from_article", Translations((("en", "See {title}:"), ("de", "Siehe {title}:")))),
        ("sources", "Links"),
    )


def test_a_default_language_that_is_not_listed_is_an_error_with_the_fix() -> None:
    assert problems("answers:\n  languages: [en, de]\n  default_language: fr\n") == [
        "team.yaml:6: answers.default_language: fr is not one of answers.languages (en, de): "
        "add fr to answers.languages, or make the default one of them"
    ]


def test_every_code_that_is_no_iso_639_1_code_is_named_with_its_fix() -> None:
    assert problems(
        "answers:\n"  # line 4
        "  languages:\n"
        "    - ge\n"
        "    - pt-BR\n"
        "    - German\n"
        "    - en\n"
        "    - en\n"
        "  default_language: english\n"
    ) == [
        "team.yaml:6: answers.languages[0]: 'ge' is not an ISO 639-1 language code: write the "
        "language's two-letter code, e.g. en, de, fr, es, pt",
        "team.yaml:7: answers.languages[1]: 'pt-BR' is not an ISO 639-1 language code: write "
        "pt (Portuguese), the language without its region",
        "team.yaml:8: answers.languages[2]: 'German' is not an ISO 639-1 language code: write "
        "de for German",
        "team.yaml:10: answers.languages[4]: en is listed twice; keep one",
        "team.yaml:11: answers.default_language: 'english' is not an ISO 639-1 language code: "
        "write en for English",
    ]


def test_a_map_without_the_default_languages_text_is_an_error_with_the_fix() -> None:
    assert problems(
        "answers:\n"
        "  languages: [fr, de]\n"
        "  handoff_message: {de: Ein Mensch antwortet Ihnen., fr-FR: x}\n"
    ) == [
        "team.yaml:6: answers.handoff_message.fr-FR: 'fr-FR' is not an ISO 639-1 language code: "
        "write fr (French), the language without its region",
        "team.yaml:6: answers.handoff_message: gives no fr text, the default language's (what "
        "a customer of a language without a text of its own reads): add `fr: ...`",
    ]


def test_a_phrase_without_its_placeholder_or_unknown_is_named() -> None:
    assert problems(
        "answers:\n  phrases:\n    from_article: {en: From the article}\n    not_covered: Sorry\n"
    ) == [
        "team.yaml:7: answers.phrases.not_covered: unknown key 'not_covered' in "
        "answers.phrases (the handoff's sentence is answers.handoff_message); valid keys: "
        "from_article, sources",
        "team.yaml:6: answers.phrases.from_article.en: must hold {title}, where it is filled in",
    ]
