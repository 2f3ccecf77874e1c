"""How a body's text is written as JSON: the bytes json's own encoder writes, whatever it holds."""

from __future__ import annotations

import json
import random

import pytest

from gateway.providers.jsonshape import string

PASSAGE = 'Passage [1]: under Settings > "Security", C:\\Users\\me\n\tthen\r\nSave.\n'
# What a text may hold: every escape JSON knows, the other controls, and characters of
# one to four UTF-8 bytes (a line separator and DEL, which json leaves as they are).
ALPHABET = [*map(chr, range(0x20)), '"', "\\", "/", "a", " ", "é", "\u2028", "\x7f", "日", "😀"]


def written(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode()


@pytest.mark.parametrize("control", range(0x20))
def test_a_long_text_with_any_control_character_is_written_as_json_writes_it(control: int) -> None:
    for text in (PASSAGE * 20 + chr(control), chr(control) + PASSAGE * 20, chr(control)):
        assert string(text) == written(text)


def test_texts_of_every_length_and_character_are_written_as_json_writes_them() -> None:
    rng = random.Random(23)
    for length in (0, 1, 2, 100, 511, 512, 513, 600, 3000, 20_000):
        for common in (ALPHABET[9:11] + ALPHABET[13:14] + ALPHABET[32:], ALPHABET):
            text = "".join(rng.choice(common) for _ in range(length))
            assert string(text) == written(text), text


def test_a_text_no_utf_8_can_hold_fails_as_the_encoder_would() -> None:
    # A lone surrogate: json writes it, and encoding its output fails the same way.
    for text in ("\ud800", PASSAGE * 20 + "\ud800"):
        with pytest.raises(UnicodeEncodeError):
            written(text)
        with pytest.raises(UnicodeEncodeError):
            string(text)
