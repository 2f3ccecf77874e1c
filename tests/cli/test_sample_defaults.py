"""The sample's defaults meeting a user's own help centre: the product name said once,
a `local` deployment without a window, and legacy encodings, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.runtime.sample import SAMPLE_PRODUCT
from gateway.config import load_default_config
from tests.support.cli_runner import run
from tests.support.paths import EXAMPLES_KB

MISFIT = f'the product name is the sample\'s, "{SAMPLE_PRODUCT}", but these articles are not'


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A help centre of one's own, asked with no config of one's own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SUPPORT_ASK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "attempts.jsonl"))
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "connect.md").write_text("# Connecting\n\nRun psql -h HOST -p 5432 to connect.\n")
    return manual


def test_the_sample_product_is_the_bundled_configs() -> None:
    assert load_default_config().product == SAMPLE_PRODUCT


def test_the_sample_product_over_ones_own_articles_is_said_once(own: Path) -> None:
    result = run(["How do I connect?", "-a", str(own)])
    assert result.exit_code == 0
    assert result.stderr.count(MISFIT) == 1
    assert "set `product:` in a config of your own (`support-ask config init` writes one)" in (
        result.stderr
    )
    assert "or pass --product NAME" in result.stderr
    lines = "How do I connect?\nWhich port?\nAnd the host?\n"
    batch = run(["batch", "-", "-a", str(own)], input=lines)
    assert batch.stderr.count(MISFIT) == 1  # once for the run, not once a line


def test_no_word_when_the_product_is_named_or_the_articles_are_the_samples(
    own: Path, tmp_path: Path
) -> None:
    assert MISFIT not in run(["How do I connect?", "-a", str(own), "--product", "PG"]).stderr
    assert MISFIT not in run(["How do I reset my password?", "-a", str(EXAMPLES_KB)]).stderr
    (tmp_path / "support-ask.yaml").write_text(
        "product: PostgreSQL\ndeployments:\n  - {name: local, provider: local}\n"
    )
    mine = run(["How do I connect?", "-a", str(own), "--json"])
    assert MISFIT not in mine.stderr
    assert json.loads(mine.stdout)["status"] == "answered"
    # A config file's product is its writer's choice, even the sample's.
    (tmp_path / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local}\n"
    )
    assert MISFIT not in run(["How do I connect?", "-a", str(own)]).stderr


def test_a_local_deployment_needs_no_window(own: Path, tmp_path: Path) -> None:
    (tmp_path / "support-ask.yaml").write_text(
        "product: PostgreSQL\ndeployments:\n  - name: offline\n    provider: local\n"
    )
    checked = run(["config", "check"])
    assert checked.exit_code == 0, checked.stderr
    assert "offline: local, no window" in checked.stdout
    answered = run(["How do I connect?", "-a", str(own), "--max-article-tokens", "all"])
    assert answered.exit_code == 0 and "5432" in answered.stdout


def test_a_help_centre_in_legacy_encodings_is_read(own: Path) -> None:
    (own / "port.txt").write_bytes("Port\n\nLe port par d\xe9faut est 5432.\n".encode("latin-1"))
    (own / "host.html").write_bytes(
        b'<meta charset="windows-1252"><h1>H\xf4te</h1><p>\x93localhost\x94 par d\xe9faut.</p>'
    )
    (own / "old.md").write_bytes("# R\xe9glages\n\nVoir le fichier.\n".encode("latin-1"))
    result = run(["Quel est le port par défaut ?", "-a", str(own), "--json"])
    data = json.loads(result.stdout)
    titles = {a["title"] for a in data["articles"]}
    assert {"Port", "Hôte", "Connecting"} <= titles
    assert f"skipped {own / 'old.md'}: not UTF-8; it looks like CP1252: convert it with iconv" in (
        result.stderr
    )
