"""How the help-centre benchmarks drive support-ask: only through what a user has.

A question is asked by the console script in a fresh process, `--json`, against the
loopback OpenAI-compatible server (bench.loopback), so the prompt really is rendered and
sent: the server keeps the request body, and what reached the prompt is read from it. The
JSON's `articles` (the passages sent, with their paths) says which pages they came from.

"Today" is support-ask as it was before the help-centre work (commit TODAY, pre-change
main), extracted from this repository's history into a scratch folder and run by the same
console script and interpreter with PYTHONPATH pointing at it: same launcher, same
dependencies, only the code differs.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.docsets import ROOT
from bench.loopback import Loopback
from bench.procs import Run, RunFailed, child_env, run_once
from bench.question import KEY_ENV, config_text

# Main before the help-centre index: "no slower than today". $BENCH_TODAY names
# another commit instead, e.g. main just before the feature landed, to tell its cost from
# that of everything else landed since.
TODAY = os.environ.get("BENCH_TODAY") or "88fa2bb"
USAGE = 2  # the exit code of a flag or command this tree does not have


@dataclass(frozen=True)
class Sent:
    """What one question put in front of the model."""

    run: Run
    prompt: str  # every message's text, as the server received it
    system: str  # the system messages' text: the rendered prompt, articles and all
    articles: tuple[Mapping[str, Any], ...] | None  # the JSON's `articles`; None: no such field


class Unsupported(Exception):
    """This tree has no such flag or command (the feature has not landed in it)."""


class Tool:
    """support-ask configured for one benchmark: a private home (so its own cache dir,
    config and state), one loopback deployment, and the articles folder to ask about."""

    def __init__(
        self,
        argv: Sequence[str],
        work: Path,
        server: Loopback,
        *,
        window: int = 128_000,
        env: Mapping[str, str] | None = None,
        min_relevance: float | None = None,
        refresh: str | None = None,
    ) -> None:
        self.argv = list(argv)
        self.work = work
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.server = server
        self.config = work / "config.yaml"
        text = config_text(server.base_url, work, min_relevance=min_relevance, refresh=refresh)
        text = text.replace("128000", str(window))
        self.config.write_text(text)
        self.env = child_env(self.home, {KEY_ENV: "sk-bench-not-a-real-key", **(env or {})})

    def ask_argv(self, question: str, articles: Path, budget: int | None = None) -> list[str]:
        argv = [*self.argv, question, "--config", str(self.config)]
        argv += ["--state", str(self.work / "cooldowns.json"), "--articles", str(articles)]
        return argv + ([] if budget is None else ["--max-article-tokens", str(budget)])

    def ask(self, question: str, articles: Path, budget: int | None = None) -> Sent:
        """Ask in a fresh process, `--json`; what was sent. Raises Unsupported when this
        tree has no `--max-article-tokens`, RunFailed when the question is not answered."""
        run = run_once([*self.ask_argv(question, articles, budget), "--json"], env=self.env,
                       cwd=self.home)  # fmt: skip
        if run.code == USAGE and budget is not None:
            raise Unsupported("--max-article-tokens")
        if run.code != 0:
            raise RunFailed(_failed("ask", run), f"exit {run.code}")
        result = json.loads(run.stdout)
        body = json.loads(self.server.last_body)
        prompt = "\n".join(_texts(body))
        system = "\n".join(_texts(body, role="system"))
        articles_sent = result.get("articles")
        listed = None if articles_sent is None else tuple(articles_sent)
        return Sent(run, prompt, system, listed)

    def index_argv(self, folder: Path, *extra: str) -> list[str]:
        return [*self.argv, "index", str(folder), *extra]

    def index(self, folder: Path, *extra: str) -> Run:
        """`support-ask index FOLDER EXTRA...`. Raises Unsupported when this tree has no
        index command: asked first with `--status`, which a tree without one refuses as
        an unknown option of a question (`index FOLDER` alone would be asked as one)."""
        probe = run_once(self.index_argv(folder, "--status"), env=self.env, cwd=self.home)
        if probe.code == USAGE:
            raise Unsupported("index command")
        run = run_once(self.index_argv(folder, *extra), env=self.env, cwd=self.home)
        if run.code != 0:
            raise RunFailed(_failed("index", run))
        return run


def _texts(body: Mapping[str, Any], role: str | None = None) -> list[str]:
    """Every text of an OpenAI chat request's messages (string or content parts), or of
    those of one role."""
    out = []
    for message in body.get("messages", []):
        if role is not None and message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p.get("text", "") for p in content if isinstance(p, dict)]
    return out


def _failed(what: str, run: Run) -> str:
    return (
        f"support-ask {what} exited {run.code}: {run.stdout[:300]!r} "
        f"{run.stderr[-1500:].decode(errors='replace')}"
    )


def checkout_today(dest: Path) -> Path | None:
    """The tree at TODAY, extracted into `dest` (None when this clone lacks the commit:
    a shallow CI clone, a tarball)."""
    return checkout(TODAY, dest)


def checkout(commit: str, dest: Path) -> Path | None:
    """The tree at `commit`, extracted into `dest` (None when this clone lacks it)."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return dest


def today_env(tree: Path) -> dict[str, str]:
    """Run the console script on the code at `tree`: PYTHONPATH is searched before the
    editable install's finder, so `cli` and `gateway` come from `tree`."""
    return {"PYTHONPATH": str(tree)}
