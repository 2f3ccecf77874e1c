"""Everything the README and its docs/ pages show is run here, so they cannot drift from the code.

Each `support-ask …` command in their sh blocks (and in the README's table of common jobs)
runs as a real process, offline: no API keys (the bundled config's `local` deployment
answers), temporary state and log. The main command must answer "How do I reset my
password?" from examples/kb with the LLM deployments visibly skipped for their missing keys.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.markdown import anchors

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {"README.md": README, **{f"docs/{name}": text for name, text in DOCS.items()}}
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY")
# Where each command's reference lives: every flag its --help lists is on that page.
COMMAND_PAGES = {
    "ask": "ask.md",
    "simulate": "simulate.md",
    "cooldowns": "cooldowns.md",
    "config check": "configuration.md",
    "stats": "stats-and-eval.md",
    "eval": "stats-and-eval.md",
    "batch": "batch.md",
    "index": "help-centre.md",
}


def sh_blocks() -> list[str]:
    return [b for text in PAGES.values() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def common_jobs() -> list[str]:
    """The commands of the README's table of common jobs (a cell's code that is one)."""
    table = README.split("## Common jobs", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`(support-ask [^`]+)`", table)


def readme_commands() -> list[str]:
    """Every `support-ask …` invocation, cut where the shell takes over (a pipe, a redirect)."""
    found: list[str] = []
    lines = [line for block in sh_blocks() for line in block.splitlines()] + common_jobs()
    for line in lines:
        at = line.find("support-ask ")
        if at < 0 or "pip install" in line:
            continue
        command = re.split(r"\s*(?:\||>|\)|;)\s*", line[at:])[0]
        found.append(command.strip())
    return found


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        SUPPORT_ASK_STATE=str(tmp_path / "cooldowns.json"),
        SUPPORT_ASK_LOG=str(tmp_path / "attempts.jsonl"),
        NO_COLOR="1",
    )
    env.pop("SUPPORT_ASK_CONFIG", None)
    return env


def run(command: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "support-ask"
    return subprocess.run(
        [sys.executable, "-m", "cli", *argv[1:]],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_the_readme_shows_commands_to_run() -> None:
    assert len(readme_commands()) >= 15


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands())
def test_every_readme_command_runs(command: str, offline_env: dict[str, str]) -> None:
    stdin = "Can I get a refund?\n" if command.split()[1:2] == ["-"] else ""
    proc = run(command, offline_env, stdin)
    assert "Traceback" not in proc.stderr, proc.stderr
    # 1 is a bug and 2 a usage error: a README command must never earn either.
    assert proc.returncode not in (1, 2), (proc.returncode, proc.stderr)


@pytest.mark.slow
def test_the_main_command_answers_offline_and_shows_why_llms_were_skipped(
    offline_env: dict[str, str],
) -> None:
    main = next(c for c in readme_commands() if "reset my password" in c)
    assert main == 'support-ask "How do I reset my password?" --articles examples/kb'
    proc = run(main + " --show-attempts", offline_env)
    assert proc.returncode == 0, proc.stderr
    assert "password" in proc.stdout.lower()
    assert "Resetting your password" in proc.stdout
    assert "OPENAI_API_KEY not set" in proc.stderr
    assert "ANTHROPIC_API_KEY not set" in proc.stderr
    assert "local" in proc.stderr


@pytest.mark.slow
def test_the_json_example_has_the_fields_the_readme_names(offline_env: dict[str, str]) -> None:
    proc = run('support-ask "Can I get a refund?" -a examples/kb --json', offline_env)
    data = json.loads(proc.stdout)
    documented = re.search(r"```json\n(.*?)```", DOCS["output.md"], flags=re.S)
    assert documented is not None
    for key in re.findall(r'"(\w+)":', documented.group(1)):
        assert key in data or key in data["attempts"][0] or key in data["usage"], key


def test_the_readme_exit_code_table_matches_the_cli() -> None:
    from cli.runtime.exitcodes import ExitCode

    table = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", README, flags=re.M))
    assert {int(c) for c in table} == {int(e) for e in ExitCode}


def test_the_readme_config_reference_names_every_key_and_its_default() -> None:
    from gateway import config as cfg

    section = DOCS["configuration.md"].split("## Environment", 1)[0]
    documented = set(re.findall(r"^\| `([\w.\[\]]+)` \|", section, flags=re.M))
    expected = (
        {
            k
            for k in cfg._TOP_KEYS
            if k not in {"policy", "state", "log", "deployments", "articles", "privacy", "answers"}
        }
        | {f"policy.{k}" for k in cfg._POLICY_KEYS}
        | {f"privacy.{k}" for k in cfg._PRIVACY_KEYS}
        | {f"articles.{k}" for k in cfg._ARTICLES_KEYS}
        | {f"answers.{k}" for k in cfg._ANSWERS_KEYS}
        | {f"state.{k}" for k in cfg._STATE_KEYS}
        | {f"log.{k}" for k in cfg._LOG_KEYS}
        | {"deployments[]"}
    )
    assert documented == expected
    deployment_row = re.search(r"^\| `deployments\[\]` \|.*$", section, flags=re.M)
    assert deployment_row is not None
    for key in cfg._DEPLOYMENT_KEYS:
        assert f"`{key}`" in deployment_row.group(0), key
    # Each policy default in the README is the code's default.
    for name in cfg._POLICY_KEYS:
        row = re.search(rf"^\| `policy\.{name}` \| ([\d.]+) \|", section, flags=re.M)
        assert row is not None and float(row.group(1)) == float(getattr(cfg.Policy(), name))


def _long_options(command: list[str]) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", *command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        timeout=60,
        check=True,
    )
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", proc.stdout)) - {
        "--help",
        "--install-completion",
        "--show-completion",
    }


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMAND_PAGES))
def test_every_flag_of_every_command_is_on_its_reference_page(command: str) -> None:
    page = DOCS[COMMAND_PAGES[command]]
    missing = {
        flag
        for flag in _long_options(command.split())
        if not re.search(rf"(?<![\w-]){flag}(?![\w-])", page)
    }
    assert not missing, f"{command}: {sorted(missing)} not in docs/{COMMAND_PAGES[command]}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_link_reaches_a_page_and_a_heading_in_it(page: str) -> None:
    here = (ROOT / page).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", PAGES[page]):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (here / path).resolve() if path else ROOT / page
        assert file.exists(), f"{page}: {target} leads nowhere"
        if anchor:
            assert anchor in anchors(file.read_text(encoding="utf-8")), f"{page}: no #{anchor}"


def test_every_docs_page_is_one_link_from_the_readme() -> None:
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", README))
    assert set(DOCS) <= linked, sorted(set(DOCS) - linked)


def test_the_readme_and_each_page_read_at_once() -> None:
    # The README holds the first day; the reference is split into pages one can read whole.
    assert README.count("\n") <= 200, "the README grew: move the reference into docs/"
    for name, text in DOCS.items():
        assert text.count("\n") <= 160, f"docs/{name} grew: split it into two pages"
