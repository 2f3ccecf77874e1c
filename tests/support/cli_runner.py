"""Running the CLI in tests: in process through Typer's runner, and the workdir that
real-process tests point at a loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.shell.root import build_app


def run(args: list[str], input: str | None = None) -> Any:
    return CliRunner().invoke(build_app(), args, input=input, prog_name="support-ask")


def write_loopback_workdir(
    workdir: Path,
    base: str,
    answer: str,
    *,
    retries: int,
    budget: int,
    timeout: int,
    min_relevance: float | None = None,
) -> None:
    """A sample-config-shaped support-ask.yaml whose OpenAI primary and Anthropic fallback
    both point at one loopback server, with local state and log files, and a one-article
    help centre holding `answer`. `min_relevance`: the config's `articles.min_relevance`
    (0 for tests whose questions that one article does not cover)."""
    articles = "" if min_relevance is None else f"articles:\n  min_relevance: {min_relevance}\n"
    (workdir / "support-ask.yaml").write_text(
        f"""\
product: Acme Cloud
policy:
  retries: {retries}
  cooldown: 60
  budget: {budget}
  timeout: {timeout}
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    base_url: {base}/v1
    context_window: 128000
  - name: fallback
    provider: anthropic
    model: claude-haiku-4-5
    api_key_env: ANTHROPIC_API_KEY
    base_url: {base}
    context_window: 200000
long_context: null
state:
  path: state.json
log:
  path: attempts.jsonl
"""
        + articles
    )
    kb = workdir / "kb"
    kb.mkdir(exist_ok=True)
    (kb / "reset.md").write_text("# Reset your password\n\n" + answer + "\n")
