"""A question the help centre does not cover is handed off before any deployment is asked:
`ask` (plain, --json, --stream) and `batch` through Typer's runner with a transport that
records every call it is made and answers none, then one real `support-ask` process
against a provider on 127.0.0.1 that must not hear from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.runtime import wiring
from tests.support.cli_runner import run
from tests.support.loopback import Exchange, LoopbackServer

NOT_COVERED = (
    "I could not find that in the Acme Cloud help centre. Would you like me to open a "
    "support ticket?"
)
COVERED = "How do I reset my password?"
ELSEWHERE = "How do I install Docker on Ubuntu?"

# Two deployments of one provider on one key, then the offline one: any of them asked
# would be a model call the handoff must not make.
CONFIG = """\
product: Acme Cloud
policy: {retries: 0, budget: 20, timeout: 10}
deployments:
  - {name: mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
     base_url: "http://127.0.0.1:9/v1", context_window: 128000}
  - {name: big, provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY,
     base_url: "http://127.0.0.1:9/v1", context_window: 128000}
  - {name: local, provider: local, context_window: 1000000}
"""


class Calls:
    """The transport every engine of the run gets: it records each request and answers
    with a real chat completion, so a call it was made shows in the test, not as a
    failure the engine would fail over from."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.made.append(str(request.url))
        choice = {"index": 0, "message": {"role": "assistant", "content": "Open Settings [1]."}}
        return httpx.Response(200, json={"choices": [{**choice, "finish_reason": "stop"}]})


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    made = Calls()
    built = wiring.build_engine

    def build_engine(config: Any, **kwargs: Any) -> Any:
        return built(config, **{**kwargs, "transport": httpx.MockTransport(made)})

    monkeypatch.setattr(wiring, "build_engine", build_engine)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai")
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "attempts.jsonl"))
    (tmp_path / "support-ask.yaml").write_text(CONFIG)
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "reset.md").write_text(
        "# Reset your password\n\nOpen Settings, then Security, and click Reset password.\n"
    )
    (kb / "refunds.md").write_text("# Refunds\n\nA refund of an annual plan takes five days.\n")
    yield made


def ask(*args: str) -> Any:
    return run(["ask", *args, "-a", "kb"])


@pytest.mark.parametrize("flags", [[], ["--stream"]], ids=["whole", "stream"])
def test_the_handoff_message_is_on_stdout_with_exit_5_and_nothing_is_called(
    tmp_path: Path, calls: Calls, flags: list[str]
) -> None:
    out = ask(ELSEWHERE, *flags)
    assert out.exit_code == 5, out.output
    assert out.stdout == NOT_COVERED + "\n"  # no Sources list: nothing was answered
    assert "handed off (not_covered, exit 5)" in out.stderr
    assert "relevance floor 0.35 (articles.min_relevance)" in out.stderr
    assert calls.made == []
    assert not (tmp_path / "state.json").exists()  # no engine was even wired
    # A question it does cover is asked, through the same transport.
    ask(COVERED, *flags)
    assert calls.made[0].endswith("/v1/chat/completions")


@pytest.mark.parametrize("flags", [[], ["--stream"]], ids=["whole", "stream"])
def test_the_json_says_handoff_not_covered_with_no_attempt(calls: Calls, flags: list[str]) -> None:
    out = ask(ELSEWHERE, "--json", *flags)
    assert out.exit_code == 5, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 1 and lines[0].get("type") == ("result" if flags else None)
    result = lines[0]
    assert (result["status"], result["action"], result["answer"]) == (
        "answered",
        "handoff",
        NOT_COVERED,
    )
    assert result["handoff"]["reason"] == "not_covered"
    assert "under the relevance floor" in result["handoff"]["detail"]
    assert (result["deployment"], result["attempts"], result["citations"]) == (None, [], [])
    assert result["schema_version"] == 1 and result["grounded"] is False
    assert calls.made == []


def test_the_configured_message_floor_and_log_apply(tmp_path: Path, calls: Calls) -> None:
    config = tmp_path / "support-ask.yaml"
    config.write_text(CONFIG + "answers:\n  handoff_message: A person will reply within a day.\n")
    out = ask(ELSEWHERE, "-q")
    assert (out.exit_code, out.stdout) == (5, "A person will reply within a day.\n")
    (line,) = [json.loads(x) for x in (tmp_path / "attempts.jsonl").read_text().splitlines()]
    assert (line["action"], line["handoff"], line["served_by"]) == ("handoff", "not_covered", None)
    # A floor of 0 turns the handoff off: the model is asked (and here, answers).
    config.write_text(CONFIG + "articles:\n  min_relevance: 0\n")
    assert ask(ELSEWHERE, "-q").exit_code == 0
    assert len(calls.made) == 1


# Only the offline deployment, as a new user with no key has it.
OFFLINE = """\
product: Acme Cloud
deployments:
  - {name: local, provider: local, context_window: 1000000}
"""
# Holds "refund" of refunds.md, and little else of it: under the default floor.
WEAK = "Can I get a refund on my groceries at the supermarket?"


def test_the_offline_deployment_answers_and_hands_off_at_the_teams_floor(
    tmp_path: Path, calls: Calls
) -> None:
    config = tmp_path / "support-ask.yaml"
    config.write_text(OFFLINE)
    handed = ask(WEAK, "--json")
    assert handed.exit_code == 5, handed.output
    assert json.loads(handed.stdout)["handoff"]["reason"] == "not_covered"
    # A floor of 0 turns the handoff off for the offline deployment too: it answers from
    # the one article that holds a word of the question, not with a handoff of its own.
    config.write_text(OFFLINE + "articles:\n  min_relevance: 0\n")
    answered = ask(WEAK, "--json")
    assert answered.exit_code == 0, answered.output
    result = json.loads(answered.stdout)
    assert (result["action"], result["deployment"]) == ("answer", "local")
    assert [c["path"].rsplit("/", 1)[-1] for c in result["citations"]] == ["refunds.md"]
    assert "five days" in result["answer"]
    assert calls.made == []


def test_without_a_help_centre_the_model_is_asked(calls: Calls) -> None:
    out = run(["ask", ELSEWHERE, "-q"])
    assert out.exit_code == 0, out.output
    assert len(calls.made) == 1


def test_batch_records_carry_the_handoff_and_the_summary_counts_it(
    tmp_path: Path, calls: Calls
) -> None:
    (tmp_path / "tickets.jsonl").write_text(
        json.dumps({"id": "T-1", "question": COVERED})
        + "\n"
        + json.dumps({"id": "T-2", "question": ELSEWHERE})
        + "\n"
    )
    out = run(["batch", "tickets.jsonl", "-a", "kb", "-j", "1"])
    assert out.exit_code == 5, out.output
    records = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert records["T-1"]["action"] == "answer"
    assert records["T-2"]["handoff"]["reason"] == "not_covered"
    assert (records["T-2"]["answer"], records["T-2"]["attempts"]) == (NOT_COVERED, [])
    assert "1 answered, 1 handed off, 0 refused" in out.stderr
    assert len(calls.made) == 1  # T-1's only


@pytest.mark.slow  # a support-ask process
def test_a_real_process_hands_off_without_calling_the_provider(tmp_path: Path) -> None:
    heard: list[str] = []

    def handle(ex: Exchange) -> None:
        heard.append(ex.path)
        ex.respond(500, {"error": {"message": "no call was to be made"}})

    with LoopbackServer(handle) as server:
        (tmp_path / "support-ask.yaml").write_text(CONFIG.replace("http://127.0.0.1:9", server.url))
        (tmp_path / "kb").mkdir()
        (tmp_path / "kb" / "reset.md").write_text("# Reset your password\n\nOpen Settings.\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORT_ASK_")}
        env.update(
            OPENAI_API_KEY="test-key-openai",
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
            SUPPORT_ASK_STATE=str(tmp_path / "state.json"),
            SUPPORT_ASK_LOG=str(tmp_path / "attempts.jsonl"),
        )
        done = subprocess.run(
            [sys.executable, "-m", "cli", ELSEWHERE, "-a", "kb", "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 5, done.stderr
    result = json.loads(done.stdout)
    assert (result["action"], result["handoff"]["reason"]) == ("handoff", "not_covered")
    assert result["answer"] == NOT_COVERED
    assert heard == []
