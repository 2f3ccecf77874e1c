"""Masking: which values a customer pastes become placeholders, which look-alikes do not
(order numbers, dates, amounts, prices), one table per question, and the way back."""

from __future__ import annotations

import pytest

from gateway.answers.masking import (
    Masker,
    StreamUnmasker,
    iban_ok,
    luhn_ok,
    unmask,
    unmask_result,
    without_placeholders,
)
from gateway.config.model import MaskPattern, PrivacySettings
from gateway.model import Refusal, RefusedBy, Result, Route, Status

MASKER = Masker()


def masked(text: str) -> str:
    return MASKER.mask([text]).question


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am jane.doe+acme@example.co.uk.", "I am [EMAIL_1]."),
        ("Card 4111 1111 1111 1111 was charged", "Card [CARD_1] was charged"),
        ("card: 5500-0000-0000-0004", "card: [CARD_1]"),
        ("Amex 378282246310005 please", "Amex [CARD_1] please"),
        ("IBAN DE89 3704 0044 0532 0130 00 thanks", "IBAN [IBAN_1] thanks"),
        ("iban gb82west12345698765432", "iban [IBAN_1]"),
        ("call +44 20 7946 0958 today", "call [PHONE_1] today"),
        ("ring me: (555) 123-4567", "ring me: [PHONE_1]"),
        ("mon portable 06 12 34 56 78", "mon portable [PHONE_1]"),
        ("my number 07700900123.", "my number [PHONE_1]."),
        ("Telefon 0170 1234567", "Telefon [PHONE_1]"),
        ("phone 5551234567", "phone [PHONE_1]"),
        ("0049 30 1234 5678 is the office", "[PHONE_1] is the office"),
        # A card is masked whatever the words before it: leaking one costs more than
        # masking an order number that passes Luhn.
        ("order 12 paid with 4111111111111111", "order 12 paid with [CARD_1]"),
    ],
)
def test_what_a_customer_pastes_is_masked(text: str, expected: str) -> None:
    assert masked(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Order 4111111111111112 never arrived",  # 16 digits, fails Luhn
        "Order #100234556 was shipped on 2024-03-15",
        "Invoice INV-2024-0042 for $1,299.00",
        "It cost 1 299,00 EUR on 15.03.2024 at 14:30",
        "We have 1 250 000 users and 12.50 per seat",
        "ticket 20240315 and case 1234567890",
        "DE89 3704 0044 0532 0130 02 is mistyped",  # mod-97 fails
        "version 2.45.1, build 20240315.1",
        "tracking 1Z999AA10123456784",
        "our customer id 0612345678",
    ],
)
def test_look_alikes_stay_as_written(text: str) -> None:
    assert masked(text) == text


def test_the_same_value_is_the_same_placeholder_across_the_question_and_its_thread() -> None:
    done = MASKER.mask(
        [
            "I'm jane@example.com, card 4111 1111 1111 1111",
            "Is JANE@example.com right? The card is 4111111111111111.",
            "And bob@example.com too",
        ]
    )
    assert done.texts == (
        "I'm [EMAIL_1], card [CARD_1]",
        "Is [EMAIL_1] right? The card is [CARD_1].",
        "And [EMAIL_2] too",
    )
    assert done.counts == {"email": 2, "phone": 0, "card": 1, "iban": 0}
    # The value as first written comes back, in memory only.
    assert unmask("sent to [EMAIL_1]", done).text == "sent to jane@example.com"
    assert "jane" not in repr(done)


def test_unmasking_leaves_an_invented_placeholder_and_names_it() -> None:
    done = MASKER.mask(["I'm jane@example.com"])
    back = unmask("We wrote to [EMAIL_1] and [EMAIL_2]; see [STEP_1].", done)
    assert back.text == "We wrote to jane@example.com and [EMAIL_2]; see [STEP_1]."
    assert back.invented == ("[EMAIL_2]",)  # [STEP_1] is no placeholder of ours


def test_a_team_pattern_is_masked_and_counted_by_its_name() -> None:
    settings = PrivacySettings(patterns=(MaskPattern("customer id", r"CUS-\d{6}"),))
    done = Masker.of(settings).mask(["I am CUS-123456, mail me at a@b.io"])
    assert done.question == "I am [CUSTOMER_ID_1], mail me at [EMAIL_1]"
    assert done.counts["customer id"] == 1


def test_mask_false_keeps_the_built_in_kinds_but_not_the_team_patterns() -> None:
    settings = PrivacySettings(mask=False, patterns=(MaskPattern("ref", r"REF\d+"),))
    done = Masker.of(settings).mask(["a@b.io REF12"])
    assert done.question == "a@b.io [REF_1]"
    assert done.counts == {"ref": 1}
    assert Masker.of(PrivacySettings(mask=False)).mask(["a@b.io"]).question == "a@b.io"


def test_a_streamed_placeholder_split_across_deltas_comes_back_whole() -> None:
    done = MASKER.mask(["I'm jane@example.com"])
    stream = StreamUnmasker(done)
    out = [stream.feed(d) for d in ("We sent it to [EM", "AIL_", "1] an", "d [x")]
    out.append(stream.flush())
    assert "".join(out) == "We sent it to jane@example.com and [x"
    assert out[0] == "We sent it to "  # nothing of a possible placeholder shown early


def test_a_restart_drops_a_held_tail() -> None:
    stream = StreamUnmasker(MASKER.mask(["jane@example.com"]))
    assert stream.feed("old [EMA") == "old "
    stream.reset()
    assert stream.feed("new") + stream.flush() == "new"


def test_the_result_shown_has_the_values_back_and_the_counts() -> None:
    done = MASKER.mask(["I'm jane@example.com"])
    result = Result(
        status=Status.REFUSED,
        answer="[EMAIL_1]? No.",
        deployment="primary",
        provider="openai",
        model="m",
        routed=Route.NORMAL,
        input_tokens=1,
        elapsed_s=0.1,
        attempts=(),
        refusal=Refusal(RefusedBy.MODEL, "I won't mail [EMAIL_1]."),
    )
    shown, invented = unmask_result(result, done)
    assert shown.answer == "jane@example.com? No."
    assert shown.refusal is not None and shown.refusal.message == "I won't mail jane@example.com."
    assert shown.as_json()["masked"] == {"email": 1, "phone": 0, "card": 0, "iban": 0}
    assert invented == ()


def test_the_search_never_gets_a_placeholder_as_a_word() -> None:
    assert without_placeholders("reset for [EMAIL_1] now").split() == ["reset", "for", "now"]


def test_the_checks() -> None:
    assert luhn_ok("79927398713") and not luhn_ok("79927398710")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82WEST12345698765433")
    assert not iban_ok("GB82")


# Every question is masked, and most hold no digit and no "@": for them the masking must
# compile none of its patterns (compiling them all costs more than masking a message).
# Checked in a fresh interpreter, counting the `re` calls made from the masking module.
_PROBE = """
import re, sys
calls = []
for name in ("compile", "match", "search", "finditer", "sub"):
    real = getattr(re, name)
    def counting(*args, _real=real, **kwargs):
        if sys._getframe(1).f_globals.get("__name__") == "gateway.answers.masking":
            calls.append(args[0])
        return _real(*args, **kwargs)
    setattr(re, name, counting)
from gateway.answers.masking import Masker, unmask
masker = Masker()
done = masker.mask(["How do I reset my password?", "It says the link expired."])
unmask("Open Settings, then Reset password.", done)
print(len(calls))
masker.mask(["I am jane@example.com"])
print(len(calls) > 0)
"""


def test_a_question_without_digits_or_at_signs_compiles_no_pattern() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True"]
