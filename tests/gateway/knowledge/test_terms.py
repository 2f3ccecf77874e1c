"""What a term is: the same words whether a passage is ASCII or not."""

from __future__ import annotations

from gateway.knowledge.terms import terms


def test_an_accented_word_stays_one_term_beside_ascii_words() -> None:
    # A passage with one accented letter is read by the Unicode word class: "café" is a
    # word of its own, not "caf" cut at the "é", and the ASCII words around it are the
    # terms they are in an ASCII passage.
    assert terms("Café billing: reset_password 2FA") == ["café", "bill", "reset", "password", "2fa"]
    assert terms("Cafe billing: reset_password 2FA") == ["cafe", "bill", "reset", "password", "2fa"]


def test_non_latin_words_are_terms() -> None:
    assert terms("Пароль сброс") == ["пароль", "сброс"]
