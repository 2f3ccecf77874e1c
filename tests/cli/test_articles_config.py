"""The help centre named in the config (articles.paths, articles.exclude) through the CLI:
ask without --articles, what is left out, the errors, `config check` and `index --status`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli_runner import run
from tests.support.helpcentre import write_centre
from tests.support.paths import EXAMPLES_KB

QUESTION = "How do I reset my password?"
# A book index repeats every term of the manual: left in, it wins the question.
GENINDEX = "<h1>Index</h1><p>" + "reset password, how do I reset my password? " * 20 + "</p>"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a config and its help centre (`kb`, with a book index and a
    changelog in it); the tests run from another folder."""
    root = tmp_path / "site"
    shutil.copytree(EXAMPLES_KB, root / "kb")
    (root / "kb" / "genindex.html").write_text(GENINDEX)
    (root / "kb" / "release").mkdir()
    (root / "kb" / "release" / "changelog-2.md").write_text(
        "# Changelog\n\nReset password fixed.\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "attempts.jsonl"))
    return root


def write_config(site: Path, articles: str) -> str:
    config = site / "support-ask.yaml"
    config.write_text(
        "product: Acme Cloud\ndeployments:\n  - {name: local, provider: local, "
        f"context_window: 1000000}}\narticles:\n{articles}"
    )
    return str(config)


def ask(*args: str) -> tuple[int, dict[str, object], str]:
    result = run([QUESTION, *args, "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def sent(data: dict[str, object]) -> list[str]:
    return [a["path"] for a in data["articles"]]  # type: ignore[index, union-attr]


def test_the_config_names_the_help_centre_relative_to_its_own_folder(site: Path) -> None:
    config = write_config(site, "  paths: kb\n")
    code, data, stderr = ask("-c", config)
    assert code == 0, stderr
    assert "Resetting your password" in data["answer"]  # type: ignore[operator]
    assert str(site / "kb" / "account" / "resetting-your-password.md") in sent(data)
    assert "no --articles given" not in stderr


def test_articles_on_the_command_line_win_over_the_config(site: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "reset.md").write_text("# Password resets\n\nAsk your administrator.\n")
    config = write_config(site, "  paths: [kb]\n")
    _, data, _ = ask("-c", config, "-a", str(other))
    assert sent(data) == [str(other / "reset.md")]


def test_exclude_leaves_out_the_pages_that_are_not_articles(site: Path) -> None:
    config = write_config(site, "  paths: kb\n")
    _, every, _ = ask("-c", config)
    assert str(site / "kb" / "genindex.html") in sent(every)
    assert str(site / "kb" / "release" / "changelog-2.md") in sent(every)
    config = write_config(site, '  paths: kb\n  exclude: [genindex.html, "**/changelog*"]\n')
    code, data, _ = ask("-c", config)
    assert code == 0
    assert not any("genindex" in p or "changelog" in p for p in sent(data))
    # The patterns hold for a folder given with --articles too.
    _, given, _ = ask("-c", config, "-a", str(site / "kb"))
    assert sent(given) == sent(data)


def test_a_config_path_that_does_not_exist_names_the_key_and_the_file(site: Path) -> None:
    config = write_config(site, "  paths: [kb, manual]\n")
    result = run([QUESTION, "-c", config])
    assert result.exit_code == 66
    assert f"articles path not found: {site / 'manual'} (articles.paths in {config})" in (
        result.stderr
    )
    assert f"fix articles.paths in {config}" in result.stderr


def test_bad_paths_and_patterns_are_each_named_by_line(site: Path) -> None:
    config = write_config(site, "  paths: []\n  exclude:\n    - genindex.html\n    - /\n")
    result = run([QUESTION, "-c", config])
    assert result.exit_code == 78
    assert "support-ask.yaml:5: articles.paths: the list is empty" in result.stderr
    assert "support-ask.yaml:8: articles.exclude[1]: '/': it names no file" in result.stderr
    config = write_config(site, "  paths: {kb: true}\n  exclude: [[genindex.html]]\n")
    result = run([QUESTION, "-c", config])
    assert result.exit_code == 78
    assert "articles.paths: expected a folder or a list of them, got a mapping" in result.stderr
    assert "articles.exclude[0]: expected a pattern, got a list" in result.stderr


def test_config_check_shows_the_help_centre_and_refuses_a_missing_one(site: Path) -> None:
    config = write_config(site, '  paths: kb\n  exclude: ["**/changelog*"]\n')
    checked = run(["config", "check", "-c", config])
    assert checked.exit_code == 0, checked.stderr
    assert f"articles: {site / 'kb'}\n  exclude: **/changelog*\n" in checked.stdout
    data = json.loads(run(["config", "check", "-c", config, "--json"]).stdout)
    assert data["articles"]["paths"] == [str(site / "kb")]
    assert data["articles"]["exclude"] == ["**/changelog*"]
    assert data["articles"]["refresh"] == "every_question"
    assert "refreshed:" not in checked.stdout
    trusting = write_config(site, "  paths: kb\n  refresh: on_index\n")
    checked = run(["config", "check", "-c", trusting])
    assert checked.exit_code == 0, checked.stderr
    assert "  refreshed: by `support-ask index` alone (articles.refresh: on_index)\n" in (
        checked.stdout
    )
    data = json.loads(run(["config", "check", "-c", trusting, "--json"]).stdout)
    assert data["articles"]["refresh"] == "on_index"
    config = write_config(site, "  paths: [kb, manual]\n")
    checked = run(["config", "check", "-c", config])
    assert checked.exit_code == 78
    assert f"{site / 'manual'} ✗ not found" in checked.stdout
    assert f"articles.paths: no such file or folder: {site / 'manual'}" in checked.stderr
    data = json.loads(run(["config", "check", "-c", config, "--json"]).stdout)
    assert not data["valid"] and data["problems"][0]["key"] == "articles.paths"


def test_index_takes_the_config_help_centre_and_says_what_was_left_out(site: Path) -> None:
    config = write_config(site, '  paths: kb\n  exclude: [genindex.html, "release/"]\n')
    status = run(["index", "--status", "-c", config])
    assert status.exit_code == 0, status.stderr
    assert f"articles: {site / 'kb'} (articles.paths in {config})" in status.stdout
    assert "exclude: genindex.html, release/ (1 file, 1 folder left out)" in status.stdout
    assert "12 files" in status.stdout  # the sample's twelve, nothing more
    assert run(["index", "-c", config]).exit_code == 0
    bare = write_config(site, "  max_tokens: 6000\n")
    nothing = run(["index", "-c", bare])
    assert nothing.exit_code == 2 and "articles.paths" in nothing.stderr


@pytest.mark.parametrize("quiet", [False, True], ids=["said", "quiet"])
def test_index_that_cannot_keep_the_index_fails_with_the_reason(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: bool
) -> None:
    """A question goes on with an index in memory; `index` is run to keep it, and a deploy
    script must see that it did not: exit 74, the reason said even under -q."""
    write_centre(site / "big", 30)  # over the size read directly on every question
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache dir should be")  # unwritable even for root
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    done = run(["index", *(["-q"] if quiet else []), str(site / "big")])
    assert done.exit_code == 74, done.stderr
    assert "could not be kept: cannot keep the article index in" in done.stderr
    assert "XDG_CACHE_HOME" in done.stderr and "Traceback" not in done.stderr
