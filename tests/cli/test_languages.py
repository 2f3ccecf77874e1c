"""The customer's language as teams configure it, through the real CLI: the handoff message
in the customer's language (one string, a map, a map without that language), detection
limited to the team's languages, the default when nothing tells, `batch` lines with their
threads, and the offline deployment's own sentences; what the customer sees on stdout and
in the JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.answers.phrases import SHIPPED, Phrase
from tests.support.cli_runner import run
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.wire_replies import reply

GERMAN = "Ich kann mich nicht anmelden, der Link zum Zurücksetzen ist abgelaufen."
FRENCH = "Je n'arrive pas à me connecter, le lien de réinitialisation a expiré."
ENGLISH = "I can't log in, the reset link has expired. What do I do?"
HANDOFF = ["[handoff] the customer asks for a person\n", "I could not find that."]
MAP = """\
  handoff_message:
    en: A person from our team will reply within a day.
    de: Ein Mitarbeiter aus unserem Team antwortet Ihnen innerhalb eines Tages.
"""


def shipped(phrase: Phrase, language: str, **values: str) -> str:
    text = SHIPPED[phrase][language]
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


class Provider:
    """An OpenAI-compatible loopback provider replying with the next scripted deltas."""

    def __init__(self) -> None:
        self.deltas: list[str] = HANDOFF
        self.server = LoopbackServer(self.handle)
        self.bodies: list[Any] = []

    def handle(self, ex: Exchange) -> None:
        self.bodies.append(ex.json())
        reply(ex, self.deltas)

    def systems(self) -> list[str]:
        return [body["messages"][0]["content"] for body in self.bodies]


@pytest.fixture
def provider() -> Iterator[Provider]:
    found = Provider()
    with found.server:
        yield found


def setup(root: Path, monkeypatch: pytest.MonkeyPatch, deployments: str, answers: str) -> None:
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai")
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(root / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(root / "attempts.jsonl"))
    (root / "support-ask.yaml").write_text(
        "product: Acme Cloud\npolicy: {retries: 0, budget: 20, timeout: 10}\n"
        f"deployments:\n{deployments}{ASKED if deployments != OFFLINE else ''}"
        f"answers:\n{answers}"
    )
    kb = root / "kb"
    kb.mkdir()
    (kb / "reset.md").write_text(
        "# Passwort zurücksetzen\n\nDer Link zum Zurücksetzen des Passworts gilt 60 Minuten. "
        "Klicken Sie auf der Anmeldeseite erneut auf Passwort vergessen, um einen neuen "
        "Link zu erhalten.\n"
    )
    (kb / "invoices.md").write_text(
        "# Rechnungen\n\nIhre Rechnungen finden Sie unter Einstellungen, Abrechnung.\n"
    )


def hosted(base: str) -> str:
    # Two deployments of one provider on one key, as most teams start.
    return (
        f"  - {{name: mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,\n"
        f'     base_url: "{base}/v1", context_window: 128000}}\n'
        f"  - {{name: big, provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY,\n"
        f'     base_url: "{base}/v1", context_window: 128000}}\n'
    )


# Every question reaches the model, whatever the one-article help centre covers.
ASKED = "articles: {min_relevance: 0}\n"
OFFLINE = "  - {name: local, provider: local}\n"


def ask(*args: str) -> Any:
    return run(["ask", *args, "-a", "kb"])


def asked(*args: str) -> tuple[int, dict[str, Any]]:
    out = ask(*args, "--json")
    return out.exit_code, json.loads(out.stdout)


def test_one_handoff_string_is_what_every_customer_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, hosted(provider.server.url), "  handoff_message: Bitte warten.\n")
    for question in (GERMAN, ENGLISH):
        out = ask(question, "-q")
        assert (out.exit_code, out.stdout) == (5, "Bitte warten.\n")
    code, result = asked(GERMAN)
    assert (code, result["language"], result["answer"]) == (5, "de", "Bitte warten.")


def test_a_handoff_map_speaks_the_customers_language_else_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, hosted(provider.server.url), MAP)
    german, english, french = ask(GERMAN, "-q"), ask(ENGLISH, "-q"), ask(FRENCH, "-q")
    assert german.stdout == (
        "Ein Mitarbeiter aus unserem Team antwortet Ihnen innerhalb eines Tages.\n"
    )
    assert english.stdout == "A person from our team will reply within a day.\n"
    # The map has no French: the default language's text, as the model was asked French.
    assert french.stdout == "A person from our team will reply within a day.\n"
    assert "Write your reply in French" in provider.systems()[2]
    code, result = asked(FRENCH)
    assert (code, result["language"], result["handoff"]["reason"]) == (5, "fr", "model")


def test_detection_is_limited_to_the_teams_two_languages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, hosted(provider.server.url), "  languages: [de, en]\n")
    assert asked(GERMAN)[1]["language"] == "de"
    # French is not the team's: not detected, the default (the first listed) instead, and
    # the not-covered sentence in German, as shipped.
    code, result = asked(FRENCH)
    assert (code, result["language"]) == (5, "de")
    assert result["answer"] == shipped(Phrase.NOT_COVERED, "de", product="Acme Cloud")
    assert "Write your reply in German" in provider.systems()[1]
    # Too short to tell: the default as well.
    assert asked("ok?")[1]["language"] == "de"
    # --language still forces any language.
    assert asked(GERMAN, "--language", "it")[1]["language"] == "it"


def test_a_default_language_the_team_does_not_list_stops_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    answers = "  languages: [en, de]\n  default_language: fr\n"
    setup(tmp_path, monkeypatch, hosted(provider.server.url), answers)
    out = ask(ENGLISH)
    assert out.exit_code == 78
    assert (
        "support-ask.yaml:11: answers.default_language: fr is not one of answers.languages "
        "(en, de): add fr to answers.languages, or make the default one of them"
    ) in out.stderr
    assert provider.bodies == []


def test_batch_lines_with_threads_each_in_their_customers_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, hosted(provider.server.url), MAP)
    lines = [
        # The follow-up alone is too short to tell: the customer's earlier message decides.
        {"id": "de", "thread": [{"role": "customer", "content": GERMAN},
                                {"role": "agent", "content": "Hallo!"},
                                {"role": "customer", "content": "Und jetzt?"}]},
        {"id": "fr", "thread": [{"role": "customer", "content": FRENCH}]},
        {"id": "en", "question": ENGLISH},
    ]  # fmt: skip
    (tmp_path / "chats.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = run(["batch", "chats.jsonl", "-a", "kb", "-j", "1"])
    records = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    said = {key: (r["language"], r["action"], r["answer"]) for key, r in records.items()}
    assert said == {
        "de": (
            "de",
            "handoff",
            "Ein Mitarbeiter aus unserem Team antwortet Ihnen innerhalb eines Tages.",
        ),
        "fr": ("fr", "handoff", "A person from our team will reply within a day."),
        "en": ("en", "handoff", "A person from our team will reply within a day."),
    }
    assert records["de"]["thread"] == {"turns": 2, "left_out": 0}


def test_the_offline_deployment_answers_in_the_customers_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(tmp_path, monkeypatch, OFFLINE, "  languages: [en, de]\n")
    out = ask("Wie lange gilt der Link zum Zurücksetzen des Passworts?", "-q")
    assert out.exit_code == 0, out.output
    intro = shipped(Phrase.FROM_ARTICLE, "de", title="Passwort zurücksetzen")
    assert out.stdout.startswith(f"{intro} Der Link zum Zurücksetzen des Passworts gilt")
    assert "\n\nQuellen:\n[2] Passwort zurücksetzen: kb/reset.md\n" in out.stdout
    code, result = asked("Verkaufen Sie auch Geschenkgutscheine für Weihnachten?")
    assert (code, result["language"], result["handoff"]["reason"]) == (5, "de", "not_covered")
    assert result["answer"] == shipped(Phrase.NOT_COVERED, "de", product="Acme Cloud")


def test_the_offline_deployment_says_what_the_team_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = (
        "  languages: [en, de]\n"
        "  phrases:\n"
        "    from_article: {en: 'See {title}:', de: 'Laut unserem Artikel {title}:'}\n"
        "    sources: {en: 'Read more:', de: 'Mehr dazu:'}\n"
    )
    setup(tmp_path, monkeypatch, OFFLINE, answers)
    out = ask("Wie lange gilt der Link zum Zurücksetzen des Passworts?", "-q")
    assert out.stdout.startswith("Laut unserem Artikel Passwort zurücksetzen: Der Link")
    assert "\n\nMehr dazu:\n[2] Passwort zurücksetzen: kb/reset.md\n" in out.stdout
