"""The help centre through the CLI: the JSON's `articles`, --max-article-tokens, and the
`index` command (build, status, clear), answered offline by the bundled `local`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import run
from tests.support.helpcentre import age, write_centre
from tests.support.paths import EXAMPLES_KB

KB = EXAMPLES_KB
NEEDLE = "Write to billing@acme.example within 30 days of the charge to get your money back."
QUESTION = "How do I get a refund for my annual plan?"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "attempts.jsonl"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


@pytest.fixture
def centre(workdir: Path) -> Path:
    root = workdir / "manual"
    write_centre(root, 30)
    age(root / "refunds.md", f"# Refunds for annual plans\n\n## Asking for a refund\n\n{NEEDLE}\n")
    return root


def ask(*args: str) -> tuple[int, dict[str, object], str]:
    result = run([*args, "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_json_lists_every_article_sent_whole_for_a_small_help_centre(workdir: Path) -> None:
    code, data, _ = ask("How do I reset my password?", "-a", str(KB))
    assert code == 0
    articles = data["articles"]
    assert isinstance(articles, list) and len(articles) == 12
    assert articles[0] == {
        "path": str(KB / "account" / "managing-your-account.md"),
        "title": "Managing your account",
        "heading": None,
        "tokens": articles[0]["tokens"],
        "score": None,
    }
    assert sum(a["tokens"] for a in articles) < 6000


def test_json_lists_the_passages_sent_from_a_big_help_centre(centre: Path) -> None:
    code, data, stderr = ask(QUESTION, "-a", str(centre))
    assert code == 0
    assert data["answer"] == f"From \u201cRefunds for annual plans\u201d: {NEEDLE} [1]"
    assert data["citations"][0]["path"] == str(centre / "refunds.md")  # type: ignore[index]
    first = data["articles"][0]  # type: ignore[index]
    assert first["path"] == str(centre / "refunds.md")
    assert first["heading"] == "Asking for a refund"
    assert first["score"] > 0
    assert "indexed 31 article files" in stderr  # built on first use, one summary line
    _, again, stderr = ask(QUESTION, "-a", str(centre))
    assert again["articles"] == data["articles"]
    assert "indexed" not in stderr  # the second question reuses the index


def test_the_attempt_log_counts_the_passages_sent(centre: Path, workdir: Path) -> None:
    code, data, _ = ask(QUESTION, "-a", str(centre))
    assert code == 0
    line = json.loads((workdir / "attempts.jsonl").read_text().splitlines()[-1])
    assert line["passages"] == len(data["articles"])  # type: ignore[arg-type]
    assert line["passage_tokens"] == sum(a["tokens"] for a in data["articles"])  # type: ignore[union-attr]
    assert NEEDLE not in (workdir / "attempts.jsonl").read_text()


def test_max_article_tokens_chooses_passages_or_every_article(workdir: Path) -> None:
    _, small, _ = ask("How do I reset my password?", "-a", str(KB), "--max-article-tokens", "300")
    chosen = small["articles"]
    assert 0 < sum(a["tokens"] for a in chosen) <= 300  # type: ignore[union-attr]
    assert chosen[0]["title"] == "Resetting your password"  # type: ignore[index]
    _, whole, _ = ask("How do I reset my password?", "-a", str(KB), "--max-article-tokens", "all")
    assert len(whole["articles"]) == 12  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0", "-5", "lots", "6k"])
def test_a_bad_max_article_tokens_is_a_usage_error(workdir: Path, value: str) -> None:
    result = run(["question", "-a", str(KB), "--max-article-tokens", value])
    assert result.exit_code == 2
    assert "--max-article-tokens takes a whole number of tokens or `all`" in result.stderr


def test_the_config_budget_applies_and_all_is_accepted(workdir: Path) -> None:
    (workdir / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        "context_window: 1000000}\narticles:\n  max_tokens: 250\n"
    )
    _, data, _ = ask("How do I reset my password?", "-a", str(KB))
    assert 0 < sum(a["tokens"] for a in data["articles"]) <= 250  # type: ignore[union-attr]
    (workdir / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        "context_window: 1000000}\narticles:\n  max_tokens: all\n"
    )
    _, data, _ = ask("How do I reset my password?", "-a", str(KB))
    assert len(data["articles"]) == 12  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0", "lots", "[1]"])
def test_a_bad_config_budget_names_the_key(workdir: Path, value: str) -> None:
    (workdir / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        f"context_window: 1000000}}\narticles:\n  max_tokens: {value}\n"
    )
    result = run(["question", "-a", str(KB)])
    assert result.exit_code == 78
    assert "support-ask.yaml:5: articles.max_tokens:" in result.stderr


def test_an_absurd_articles_path_exits_66_naming_the_cap(workdir: Path) -> None:
    write_centre(workdir / "kb", 12)
    (workdir / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        "context_window: 1000000}\narticles:\n  max_set_files: 10\n"
    )
    result = run(["question", "-a", str(workdir / "kb")])
    assert result.exit_code == 66
    assert "more than 10 files (the cap, articles.max_set_files)" in result.stderr


def test_index_builds_then_refreshes_then_reports_and_clears(centre: Path) -> None:
    built = run(["index", str(centre)])
    assert built.exit_code == 0, built.stderr
    assert "31 articles" in built.stdout and "31 files read" in built.stdout
    assert "indexed 31 article files" not in built.stdout
    again = run(["index", str(centre), "-q"])
    assert "0 files read" in again.stdout and "(31 unchanged)" in again.stdout
    age(centre / "refunds.md", "# Refunds\n\nChanged.\n")
    status = run(["index", "--status", str(centre)])
    assert status.exit_code == 0
    assert "indexed: 31 articles (0 files skipped)" in status.stdout
    assert "stale: 1 files changed, added or removed since" in status.stdout
    assert "index: " in status.stdout and ".sqlite" in status.stdout
    assert "1 files read" in run(["index", str(centre)]).stdout
    assert "stale: none" in run(["index", "--status", str(centre)]).stdout
    cleared = run(["index", "--clear", str(centre)])
    assert cleared.exit_code == 0 and "removed the index" in cleared.stdout
    assert "not indexed yet" in run(["index", "--status", str(centre)]).stdout


def test_on_index_answers_from_the_index_until_the_index_command_runs(
    centre: Path, workdir: Path
) -> None:
    (workdir / "support-ask.yaml").write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        "context_window: 1000000}\narticles:\n  refresh: on_index\n"
    )
    assert run(["index", str(centre), "-q"]).exit_code == 0
    moved = "Write to refunds@acme.example within 60 days of the charge to get your money back."
    age(centre / "refunds.md", f"# Refunds for annual plans\n\n## Asking for a refund\n\n{moved}\n")
    code, data, _ = ask(QUESTION, "-a", str(centre))
    assert code == 0 and NEEDLE in str(data["answer"])
    status = run(["index", "--status", str(centre)]).stdout
    assert (
        "stale: 1 files changed, added or removed since (articles.refresh is on_index: "
        f"questions answer from the index as it is until `support-ask index {centre}` runs)"
    ) in status
    assert "1 files read" in run(["index", str(centre), "-q"]).stdout
    code, data, _ = ask(QUESTION, "-a", str(centre))
    assert code == 0 and moved in str(data["answer"])


def test_index_of_a_small_help_centre_says_none_is_needed(workdir: Path) -> None:
    result = run(["index", str(KB)])
    assert result.exit_code == 0
    assert "read directly on every question, no index needed" in result.stdout


def test_index_needs_a_folder_and_one_action(workdir: Path) -> None:
    assert run(["index"]).exit_code == 2
    assert run(["index", "--status", "--clear", str(KB)]).exit_code == 2
    missing = run(["index", str(workdir / "nowhere")])
    assert missing.exit_code == 66 and "articles path not found" in missing.stderr


def test_a_code_comment_is_never_the_passage_a_question_gets(workdir: Path) -> None:
    from tests.gateway.knowledge.test_code_blocks import PG_HBA

    manual = workdir / "pg"
    manual.mkdir()
    (manual / "auth-pg-hba-conf.html").write_text(PG_HBA)
    write_centre(manual / "other", 4)
    code, data, _ = ask(
        "How do I change the password of user foo?",
        "-a",
        str(manual),
        "--max-article-tokens",
        "150",
    )
    assert code == 0
    sent = data["articles"]
    assert isinstance(sent, list)
    from_the_page = [p["heading"] for p in sent if p["path"].endswith("auth-pg-hba-conf.html")]
    # Before, the pre's comment lines were headings ("any database user name using ...").
    assert set(from_the_page) <= {None, "Examples", "Changing a password"}
    assert "Changing a password" in from_the_page
