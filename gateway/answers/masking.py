"""Personal data kept from the providers: a customer's e-mail addresses, phone numbers,
payment card numbers and IBANs (and the patterns a team adds) become placeholders such as
`[EMAIL_1]` before any model sees the text, and come back in the answer printed.

One `Masking` per question: the question and its thread share one table, so the same
value is the same placeholder wherever it appears, and every fallback is sent the same
masked text. The table lives in memory only; nothing here does I/O.

Why hand-written checks rather than `phonenumbers`, `python-stdnum` or `schwifty` (all on
PyPI): a card number is a Luhn sum and an IBAN a mod-97 remainder, a few lines each that
the libraries compute the same way; `phonenumbers` needs the customer's country to find a
number written without `+` (a chat rarely says it), and its import alone costs more than a
whole masking pass (bench/masking.py measures both). A phone number is therefore taken
when it is written as one (an international `+`/`00` prefix, a national `0` trunk prefix,
grouped digits) or when the words just before it say it is one, and a number the words
before it call an order, invoice or ticket is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from gateway.record import field, record, replace

if TYPE_CHECKING:
    from gateway.config.model import PrivacySettings
    from gateway.model import Result, Turn


class Kind(StrEnum):
    """The built-in kinds of personal data; the values are the `--json` `masked` keys."""

    EMAIL = "email"
    PHONE = "phone"
    CARD = "card"
    IBAN = "iban"

    @property
    def label(self) -> str:
        return self.value.upper()


@record
class Span:
    start: int
    end: int
    label: str  # the placeholder's name: EMAIL, PHONE, CARD, IBAN or a team pattern's


Finder = Callable[[str], Iterator[Span]]


# -- the checks


def luhn_ok(digits: str) -> bool:
    """The payment-card check digit (ISO/IEC 7812-1, Annex B)."""
    total = 0
    for place, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if place % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    """ISO 13616: the country code and check digits moved to the end, letters as 10..35,
    the number mod 97 is 1."""
    if not 15 <= len(iban) <= 34 or not iban[:2].isalpha() or not iban[2:4].isdigit():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# -- the finders
#
# Patterns are kept as text and compiled by `re` (which caches them) on first use: a
# question with no digit and no "@" compiles none, and compiling them all costs more than
# masking a message.

_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.%+-_'")
_DOMAIN = r"[^\W_](?:[\w-]*[^\W_])?(?:\.[^\W_](?:[\w-]*[^\W_])?)*\.[^\W\d_]{2,}"


def _emails(text: str) -> Iterator[Span]:
    # Outward from each "@": a pattern tried at every word of a message costs more than
    # the rest of the masking together.
    at = text.find("@")
    while at > 0:
        start = at
        while start > 0 and (text[start - 1] in _LOCAL_CHARS or text[start - 1].isalnum()):
            start -= 1
        while start < at and text[start] in ".'":  # 'jane@example.com' quoted
            start += 1
        domain = re.compile(_DOMAIN).match(text, at + 1)
        if domain is not None and start < at:
            yield Span(start, domain.end(), Kind.EMAIL.label)
            at = text.find("@", domain.end())
        else:
            at = text.find("@", at + 1)


# What may be a phone or card number: digits, maybe after + or (, grouped by spaces,
# hyphens, dots, slashes or parentheses. Commas are never inside one (1,299.00 is an
# amount), nor does one begin inside a word, a path or an amount.
_NUMBER = r"(?<![\w+#/.,:-])(?:\+|\(\+?)?\d[\d \-./()]{5,40}\d(?!\w|[.,:/-]\d)"
# 13 to 19 digits, in one run or grouped by single spaces or hyphens.
_CARD = r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?!\w)"
# Issuer prefixes (ISO/IEC 7812 major industry identifiers 2-6: the card networks): an
# order number that happens to pass Luhn rarely starts with them too.
_CARD_FIRST = frozenset("23456")


def _has_digit(text: str) -> bool:
    return any(digit in text for digit in "0123456789")


def _numbers(text: str) -> Iterator[Span]:
    """Cards and phone numbers: both are read from one scan for number-like runs."""
    if not _has_digit(text):
        return
    for match in re.compile(_NUMBER).finditer(text):
        cards = list(_cards(text, match.start(), match.end()))
        yield from cards
        if not cards:
            yield from _phone(text, match.group(), match.start())


def _cards(text: str, start: int, end: int) -> Iterator[Span]:
    for match in re.compile(_CARD).finditer(text, start, end):
        digits = match.group().replace(" ", "").replace("-", "")
        if digits[0] in _CARD_FIRST and luhn_ok(digits):
            yield Span(match.start(), match.end(), Kind.CARD.label)


# Country code, check digits, then the account in groups of four (the printed form) or in
# one run; either case, as customers type them.
_IBAN = r"(?<!\w)[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,4})?(?!\w)"


def _ibans(text: str) -> Iterator[Span]:
    if not _has_digit(text):
        return
    for match in re.compile(_IBAN).finditer(text):
        found = _longest_iban(match.group())
        if found:
            yield Span(match.start(), match.start() + found, Kind.IBAN.label)


def _longest_iban(candidate: str) -> int:
    """The length of the longest prefix of `candidate` ending at a group that is a valid
    IBAN (a word after it can look like one more group), 0 if none."""
    groups = candidate.split(" ")
    for count in range(len(groups), 0, -1):
        text = " ".join(groups[:count])
        if iban_ok(text.replace(" ", "").upper()):
            return len(text)
    return 0


_DATE = r"\d{1,4}([./-])\d{1,2}\1\d{1,4}\Z"
_DECIMAL = r".*\d[.]\d{1,2}\Z"  # 12.50, 1 299.99: an amount
# The words just before a number that say what it is, searched in the 32 characters before
# it; the nearest wins. English, German, French, Spanish, Italian, Portuguese, Dutch.
_PHONE_CUES = (
    "phone", "tel", "call", "mobile", "cell", "whatsapp", "sms", "text me", "reach me",
    "handy", "anruf", "rufnummer", "portable", "appel", "joindre", "numéro", "móvil",
    "movil", "llamar", "llámame", "número", "cellulare", "chiamare", "numero", "celular",
    "ligar", "telefoon", "bellen",
)  # fmt: skip
_OTHER_CUES = (
    "order", "invoice", "ticket", "ref", "case", "tracking", "account", "customer id",
    "transaction", "receipt", "serial", "licen", "bestell", "rechnung", "kunden",
    "commande", "facture", "pedido", "factura", "ordine", "fattura", "bestelling", "factuur",
    "siret", "siren", "nif", "vat", "tax", "steuer", "zip", "postcode",
    "no.", "nr", "n°", "id",
)  # fmt: skip
_CUES = r"(?<!\w)(?:(?P<phone>{})|(?P<other>{}))|(?P<hash>#)".format(
    "|".join(map(re.escape, _PHONE_CUES)), "|".join(map(re.escape, _OTHER_CUES))
)
_CUE_REACH = 32


def _phone(text: str, written: str, start: int) -> Iterator[Span]:
    if written.count(")") > written.count("("):
        written = written.rstrip(")")  # "(call 0170 1234567)": the aside's bracket
    if written.count("(") > written.count(")"):
        written, start = written[1:], start + 1
    if _is_phone(written, lambda: text[max(0, start - _CUE_REACH) : start].lower()):
        yield Span(start, start + len(written), Kind.PHONE.label)


def _is_phone(written: str, before: Callable[[], str]) -> bool:
    digits = sum(c.isdigit() for c in written)
    if not 7 <= digits <= 15:  # E.164 allows at most 15 digits
        return False
    if re.match(_DATE, written) or re.match(_DECIMAL, written):
        return False
    if written.startswith(("+", "(+")) or (written.startswith("00") and digits >= 10):
        return True  # written with an international prefix
    cue = _last_cue(before())
    if cue == "phone":
        # What the words call a phone, written as no phone number is: 14 digits in one
        # run is a company or tax number standing after it.
        return digits <= 12 or written.startswith("0")
    if cue is not None:
        return False
    if any(sep in written for sep in " -.()/"):
        # (555) 123-4567, 020 7946 0958, 06 12 34 56 78: grouped, nine digits at least
        return digits >= 9
    # One run of digits: a national number begins with its trunk prefix 0 (07700900123);
    # any other run is as likely an order or account number.
    return written.startswith("0") and 10 <= digits <= 11


def _last_cue(before: str) -> str | None:
    """Which kind of cue stands nearest before a number: "phone", "other" or None."""
    last = None
    for found in re.finditer(_CUES, before):
        last = found
    if last is None:
        return None
    return "phone" if last.group("phone") else "other"


_BUILT_IN: tuple[Finder, ...] = (_emails, _ibans, _numbers)


def _pattern_finder(label: str, regex: str) -> Finder:
    compiled = re.compile(regex)

    def find(text: str) -> Iterator[Span]:
        for match in compiled.finditer(text):
            if match.end() > match.start():
                yield Span(match.start(), match.end(), label)

    return find


def pattern_label(name: str) -> str:
    """A team pattern's placeholder name: `order ref` -> ORDER_REF."""
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


# -- masking and unmasking

PLACEHOLDER = r"\[([A-Z][A-Z0-9_]*?)_(\d+)\]"


@record
class Masked:
    """One question's texts with their personal data replaced.

    `values` maps each placeholder to what it stands for: memory only, for `unmask`;
    never printed, logged or stored (its repr hides it). `counts` is how many distinct
    values of each kind were masked (0 included), by the kind's `--json` name.
    """

    texts: tuple[str, ...]
    values: Mapping[str, str] = field(repr=False)
    counts: Mapping[str, int]
    labels: frozenset[str]  # every placeholder name this masking could issue

    @property
    def question(self) -> str:
        """The last text masked: the current message."""
        return self.texts[-1]


@record
class Unmasked:
    text: str
    invented: tuple[str, ...]  # placeholders of our kinds that no value stands behind


class Masker:
    """The finders for one configuration: the built-in kinds (unless `privacy.mask` is
    false) and the team's patterns, which win a tie with a built-in kind."""

    def __init__(self, *, built_in: bool = True, patterns: Sequence[tuple[str, str]] = ()):
        team = [(pattern_label(name), regex) for name, regex in patterns]
        self._finders: tuple[Finder, ...] = tuple(
            _pattern_finder(label, regex) for label, regex in team
        ) + (_BUILT_IN if built_in else ())
        # Each placeholder name this masker can issue, and its `--json` name: the kind's,
        # or the pattern's as the team wrote it.
        self._names = ({k.label: k.value for k in Kind} if built_in else {}) | {
            label: name for (label, _), (name, _) in zip(team, patterns, strict=True)
        }
        self._labels = frozenset(self._names)

    @classmethod
    def of(cls, settings: PrivacySettings) -> Masker:
        return cls(
            built_in=settings.mask, patterns=tuple((p.name, p.regex) for p in settings.patterns)
        )

    @property
    def active(self) -> bool:
        return bool(self._finders)

    def mask(self, texts: Sequence[str]) -> Masked:
        """`texts` (the thread's turns and the question, say) masked with one table."""
        by_value: dict[tuple[str, str], str] = {}
        values: dict[str, str] = {}  # the value as first written stands for its placeholder
        numbers: dict[str, int] = {}
        out = []
        for text in texts:
            pieces = []
            at = 0
            for span in self._spans(text):
                value = text[span.start : span.end]
                key = (span.label, _same(value))
                placeholder = by_value.get(key)
                if placeholder is None:
                    numbers[span.label] = numbers.get(span.label, 0) + 1
                    placeholder = f"[{span.label}_{numbers[span.label]}]"
                    by_value[key] = placeholder
                    values[placeholder] = value
                pieces.append(text[at : span.start])
                pieces.append(placeholder)
                at = span.end
            pieces.append(text[at:])
            out.append("".join(pieces))
        counts = {name: numbers.get(label, 0) for label, name in self._names.items()}
        return Masked(tuple(out), values, counts, self._labels)

    def find(self, text: str) -> list[Span]:
        """Where `text` holds personal data, left to right (what `mask` replaces)."""
        return self._spans(text)

    def _spans(self, text: str) -> list[Span]:
        """Non-overlapping spans, left to right; of two that overlap, the one found by the
        earlier finder wins (team patterns, then e-mail, IBAN, card and phone)."""
        if not text or not self._finders:
            return []
        taken: list[Span] = []
        for finder in self._finders:
            for span in finder(text):
                if all(span.end <= t.start or span.start >= t.end for t in taken):
                    taken.append(span)
        taken.sort(key=lambda s: s.start)
        return taken


def _same(value: str) -> str:
    """What makes two written values the same one: case and spacing aside."""
    return re.sub(r"[\s\-./()]", "", value).lower()


def unmask(text: str, masked: Masked) -> Unmasked:
    """The answer with each placeholder this masking issued put back; a placeholder of one
    of its kinds that it never issued (the model made it up) is left as written."""
    if "[" not in text:
        return Unmasked(text, ())
    invented: list[str] = []

    def restore(match: re.Match[str]) -> str:
        placeholder = match.group(0)
        value = masked.values.get(placeholder)
        if value is not None:
            return value
        if match.group(1) in masked.labels and placeholder not in invented:
            invented.append(placeholder)
        return placeholder

    return Unmasked(re.sub(PLACEHOLDER, restore, text), tuple(invented))


def unmask_result(result: Result, masked: Masked) -> tuple[Result, tuple[str, ...]]:
    """The Result the customer is shown: its answer (or the model's refusal) with the
    customer's values back, and the counts of what was masked; with the placeholders the
    model invented. Attempts and errors keep the placeholders: they are not the answer."""
    invented: list[str] = []
    answer = result.answer
    if answer is not None:
        done = unmask(answer, masked)
        answer = done.text
        invented.extend(done.invented)
    refusal = result.refusal
    if refusal is not None:
        done = unmask(refusal.message, masked)
        refusal = replace(refusal, message=done.text)
        invented.extend(p for p in done.invented if p not in invented)
    shown = replace(result, answer=answer, refusal=refusal, masked=tuple(masked.counts.items()))
    return shown, tuple(invented)


def masked_turns(masked: Masked, turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """The thread's turns as masked with the question (`mask([*turns, question])`)."""
    return tuple(replace(t, content=c) for t, c in zip(turns, masked.texts[:-1], strict=True))


def without_placeholders(text: str) -> str:
    """`text` for the help centre's search: a placeholder is no word of the question."""
    return re.sub(PLACEHOLDER, " ", text) if "[" in text else text


# A placeholder's longest plausible form, for holding back a streamed tail that may be one.
_MAX_PLACEHOLDER = 48
_OPEN_TAIL = r"\[[A-Z0-9_]*\Z"


class StreamUnmasker:
    """Unmasks streamed text: a delta may end inside a placeholder (`[EMA`), so a tail
    that may still become one is held until the next delta or `flush`."""

    def __init__(self, masked: Masked) -> None:
        self._masked = masked
        self._held = ""
        self.invented: list[str] = []

    def feed(self, delta: str) -> str:
        text = self._held + delta
        if "[" not in text:
            self._held = ""
            return text
        tail = re.compile(_OPEN_TAIL).search(text, max(0, len(text) - _MAX_PLACEHOLDER))
        cut = tail.start() if tail else len(text)
        self._held = text[cut:]
        return self._out(text[:cut])

    def flush(self) -> str:
        text, self._held = self._held, ""
        return self._out(text)

    def reset(self) -> None:
        """A restart: the held tail belonged to the answer being dropped."""
        self._held = ""

    def _out(self, text: str) -> str:
        if not text:
            return ""
        done = unmask(text, self._masked)
        self.invented.extend(p for p in done.invented if p not in self.invented)
        return done.text
