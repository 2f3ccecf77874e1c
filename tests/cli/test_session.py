"""eval and simulate over a help centre far larger than any window: each question is sent
the passages `ask` would send it (the same budget, --max-article-tokens, compaction for a
smaller window), so the faults fire, every cell is asked, and a cell that cannot be asked
says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import run
from tests.support.helpcentre import write_centre

# Two model deployments with the windows of small models: the help centre whole is many
# times either, its passages within the default budget (6,000 tokens) fit both.
CONFIG = """\
product: Acme Cloud
policy:
  retries: 2
  backoff_base: 1.0
  cooldown: 60
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    context_window: 16000
  - name: fallback
    provider: anthropic
    model: claude-haiku-4-5
    api_key_env: ANTHROPIC_API_KEY
    context_window: 12000
"""


@pytest.fixture
def cli_config() -> str:
    return CONFIG


@pytest.fixture
def centre(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    manual = home / "manual"
    write_centre(manual, 60)  # ~1 MB of HTML: about 200,000 tokens whole
    (manual / "reset.md").write_text(
        "# Reset your password\n\nOpen Settings, then Security, then Reset password. "
        "A reset link arrives by email within a minute.\n"
    )
    return manual


def test_simulate_over_a_large_help_centre_shows_the_fault_and_the_fallback(
    centre: Path,
) -> None:
    out = run(["simulate", "--fail", "primary=429x3", "-a", str(centre), "--json"])
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["deployment"] == "fallback"
    assert [(a["deployment"], a["status"]) for a in result["attempts"]] == [
        ("primary", 429),
        ("primary", 429),
        ("primary", 429),
        ("fallback", 200),
    ]
    assert "Reset password" in result["answer"]
    assert result["input_tokens"] < 12000
    assert "input needs" not in out.stderr


def simulated_input_tokens(centre: Path, *flags: str) -> int:
    # Every generated page's title holds "guide": passages enough to fill any budget.
    out = run(["simulate", "-a", str(centre), "--json", *flags, "guide"])
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["deployment"] == "primary"
    return int(result["input_tokens"])


def test_simulate_sends_the_passages_within_max_article_tokens(centre: Path) -> None:
    fewer = simulated_input_tokens(centre, "--max-article-tokens", "300")
    more = simulated_input_tokens(centre, "--max-article-tokens", "1000")
    assert fewer < more < simulated_input_tokens(centre)  # the default: 6,000


def test_simulate_compacts_what_the_window_cannot_hold(centre: Path) -> None:
    # 30,000 tokens of passages: primary (16,000) is sent as many as fit its window.
    fitted = simulated_input_tokens(centre, "--max-article-tokens", "30000")
    assert simulated_input_tokens(centre) < fitted < 16000


def test_simulate_names_the_product_given(centre: Path) -> None:
    out = run(["simulate", "-a", str(centre), "--product", "Globex", "How do I fly a kite?"])
    assert out.exit_code == 0, out.stderr
    assert "Globex" in out.stdout
    assert "Acme Cloud" not in out.stdout


def test_eval_over_a_large_help_centre_asks_every_cell(centre: Path, home: Path) -> None:
    questions = home / "questions.txt"
    questions.write_text("How do I reset my password?\nCan I pay by invoice?\n")
    out = run(["eval", str(questions), "-a", str(centre), "--simulate", "--json"])
    report = json.loads(out.stdout)
    statuses = [a["status"] for q in report["questions"] for a in q["answers"]]
    assert statuses == ["answered"] * 4, out.stderr
    assert "not run" not in out.stderr


def test_eval_says_when_a_window_cannot_hold_even_the_prompt(centre: Path, home: Path) -> None:
    (home / "support-ask.yaml").write_text(
        CONFIG.replace("context_window: 12000", "context_window: 500")
    )
    questions = home / "questions.txt"
    questions.write_text("How do I reset my password?\n")
    out = run(["eval", str(questions), "-a", str(centre), "--simulate"])
    assert out.exit_code == 69
    assert "1 of 2 answers could not be asked: fallback (1)" in out.stderr
    assert "context window" in out.stderr and "context_window" in out.stderr
    assert "keys" not in out.stderr


# -- the help centre named in the config ---------------------------------------------------


@pytest.fixture
def site(centre: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config in its own folder naming the large help centre by a path relative to
    that folder; the commands run from another folder, with no --articles."""
    folder = home / "site"
    folder.mkdir()
    centre.rename(folder / "manual")
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder


def site_config(site: Path, articles: str) -> str:
    config = site / "support-ask.yaml"
    config.write_text(f"{CONFIG}articles:\n{articles}")
    return str(config)


def test_simulate_answers_from_the_config_s_articles_paths(site: Path) -> None:
    config = site_config(site, "  paths: manual\n")
    out = run(["simulate", "-c", config, "--fail", "primary=429x3", "--json"])
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["deployment"] == "fallback"
    assert "Reset password" in result["answer"]
    assert str(site / "manual" / "reset.md") in [a["path"] for a in result["articles"]]
    assert "no --articles" not in out.stderr


def test_simulate_leaves_out_what_articles_exclude_names(site: Path) -> None:
    config = site_config(site, '  paths: manual\n  exclude: ["reset.md"]\n')
    out = run(["simulate", "-c", config, "--json"])
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert str(site / "manual" / "reset.md") not in [a["path"] for a in result["articles"]]
    assert "Reset password" not in (result["answer"] or "")


def test_eval_asks_every_cell_from_the_config_s_articles_paths(site: Path, home: Path) -> None:
    config = site_config(site, "  paths: manual\n")
    questions = home / "questions.txt"
    questions.write_text("How do I reset my password?\n")
    out = run(["eval", str(questions), "-c", config, "--simulate", "--json"])
    report = json.loads(out.stdout)
    answers = [a for q in report["questions"] for a in q["answers"]]
    assert [a["status"] for a in answers] == ["answered", "answered"], out.stderr
    assert all("Reset password" in a["answer"] for a in answers)
    assert "no --articles given" not in out.stderr
