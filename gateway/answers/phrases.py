"""Every fixed sentence a customer may read, and in which languages: the one place that
says what support-ask writes itself rather than a model.

    not_covered   what the customer reads on a handoff (and the offline deployment's
                  handoff reply ends with); `answers.handoff_message` words it otherwise
    from_article  the offline answer's first words, naming the article it quotes
    sources       the heading of the list of sources after an answer

Each ships in English and the common support languages below, written for a customer
(the polite form of address: Sie, vous, usted, Lei, u). The English not-covered sentence
is the prompt's own (`prompts.NOT_COVERED`, which the prompt asks a model to write
verbatim). A team words any of them in `answers.handoff_message` and `answers.phrases`:
one text for every language, or a map by language that holds the default language's.

Which text is said, one rule for all: the config's text (its one text; else its
translation for the customer's language; else its default language's), else the shipped
translation for the customer's language, else for the default language, else English.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from gateway.answers.language import ENGLISH
from gateway.config.model import AnswerSettings, Translations
from prompts import NOT_COVERED


class Phrase(StrEnum):
    NOT_COVERED = "not_covered"
    FROM_ARTICLE = "from_article"
    SOURCES = "sources"


# The placeholders each phrase is written with; a configured text must hold them too.
PLACEHOLDERS: Mapping[Phrase, tuple[str, ...]] = MappingProxyType(
    {Phrase.NOT_COVERED: (), Phrase.FROM_ARTICLE: ("title",), Phrase.SOURCES: ()}
)
# Worded in `answers.phrases`; the not-covered sentence is `answers.handoff_message`.
CONFIGURABLE = (Phrase.FROM_ARTICLE, Phrase.SOURCES)

_NBSP = "\u00a0"  # French puts one before ":" and "?", and inside guillemets

SHIPPED: Mapping[Phrase, Mapping[str, str]] = MappingProxyType(
    {
        Phrase.NOT_COVERED: {
            "en": NOT_COVERED.replace("{{product}}", "{product}"),
            "de": "Dazu habe ich im Hilfe-Center von {product} nichts gefunden. "
            "Soll ich ein Support-Ticket für Sie eröffnen?",
            "fr": "Je n’ai rien trouvé à ce sujet dans le centre d’aide de {product}. "
            f"Voulez-vous que j’ouvre un ticket d’assistance{_NBSP}?",
            "es": "No he encontrado nada sobre eso en el centro de ayuda de {product}. "
            "¿Quiere que abra un ticket de soporte?",
            "it": "Non ho trovato nulla su questo nel centro assistenza di {product}. "
            "Vuole che apra un ticket di assistenza?",
            "nl": "Ik heb dat niet kunnen vinden in het helpcentrum van {product}. "
            "Wilt u dat ik een supportticket voor u aanmaak?",
            "pt": "Não encontrei nada sobre isso no centro de ajuda de {product}. "
            "Quer que eu abra um ticket de suporte?",
            "sv": "Jag kunde inte hitta det i hjälpcentret för {product}. "
            "Vill du att jag öppnar ett supportärende?",
            "da": "Jeg kunne ikke finde det i hjælpecenteret for {product}. "
            "Vil du have, at jeg opretter en supportsag?",
            "pl": "Nie udało mi się znaleźć tego w centrum pomocy {product}. "
            "Czy mam utworzyć zgłoszenie do działu wsparcia?",
        },
        Phrase.FROM_ARTICLE: {
            "en": "From \u201c{title}\u201d:",
            "de": "Aus dem Artikel \u201e{title}\u201c:",
            "fr": f"D’après l’article «{_NBSP}{{title}}{_NBSP}»{_NBSP}:",
            "es": "Según el artículo «{title}»:",
            "it": "Dall’articolo «{title}»:",
            "nl": "Uit het artikel \u2018{title}\u2019:",
            "pt": "Do artigo \u201c{title}\u201d:",
            "sv": "Ur artikeln \u201d{title}\u201d:",
            "da": "Fra artiklen \u00bb{title}\u00ab:",
            "pl": "Z artykułu \u201e{title}\u201d:",
        },
        Phrase.SOURCES: {
            "en": "Sources:",
            "de": "Quellen:",
            "fr": f"Sources{_NBSP}:",
            "es": "Fuentes:",
            "it": "Fonti:",
            "nl": "Bronnen:",
            "pt": "Fontes:",
            "sv": "Källor:",
            "da": "Kilder:",
            "pl": "Źródła:",
        },
    }
)

# (phrase, its template) for one language: what a request carries to the offline
# deployment, which knows no config.
Wording = tuple[tuple[str, str], ...]


def configured(settings: AnswerSettings, phrase: Phrase) -> str | Translations | None:
    """The config's own text for `phrase`, if any."""
    if phrase is Phrase.NOT_COVERED:
        return settings.handoff_message
    return next((text for name, text in settings.phrases if name == phrase), None)


def template(
    phrase: Phrase,
    language: str | None,
    *,
    default: str = ENGLISH,
    own: str | Translations | None = None,
) -> str:
    """The text of `phrase` for a customer of `language` (None: the default), its
    placeholders unfilled: by the rule the module's docstring states."""
    code = language or default
    if isinstance(own, str):
        return own
    if own is not None:
        found = own.get(code) or own.get(default)
        if found is not None:
            return found
    shipped = SHIPPED[phrase]
    return shipped.get(code) or shipped.get(default) or shipped[ENGLISH]


def say(phrase: Phrase, language: str | None, settings: AnswerSettings, **values: str) -> str:
    """`phrase` for a customer of `language`, as the config `settings` word it, filled in."""
    own = configured(settings, phrase)
    return fill(template(phrase, language, default=settings.default_language, own=own), values)


def wording(language: str | None, settings: AnswerSettings) -> Wording:
    """Every phrase's template for a customer of `language`: for a request to carry."""
    default = settings.default_language
    return tuple(
        (str(p), template(p, language, default=default, own=configured(settings, p)))
        for p in Phrase
    )


def said(phrase: Phrase, carried: Wording, **values: str) -> str:
    """`phrase` as a request's `wording` has it (English when it carries none), filled."""
    text = next((t for name, t in carried if name == phrase), None)
    return fill(SHIPPED[phrase][ENGLISH] if text is None else text, values)


_PLACEHOLDER = re.compile(r"\{(product|title)\}")


def fill(text: str, values: Mapping[str, str]) -> str:
    """`text` with `{product}` and `{title}` filled in one pass (what they are filled
    with is never scanned again); any other brace stays as written."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return " ".join(values[name].split()) if name in values else match.group(0)

    # An empty product leaves two spaces; ASCII ones only: a French no-break space stays.
    return re.sub(r"  +", " ", _PLACEHOLDER.sub(value, text))


def missing_placeholders(phrase: Phrase, text: str) -> tuple[str, ...]:
    """The placeholders `phrase` needs that a configured `text` leaves out."""
    return tuple(name for name in PLACEHOLDERS[phrase] if "{" + name + "}" not in text)
