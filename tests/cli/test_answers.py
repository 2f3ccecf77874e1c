"""Answers a script can act on, through the real CLI against providers on
127.0.0.1 speaking their own wire formats: the citations kept and listed, the handoff's
exit 5 and message (the model's, uncited), streams cut anywhere, `batch`, the log and
`stats`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import run
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.wire_replies import reply

NOT_COVERED = (
    "I could not find that in the Acme Cloud help centre. Would you like me to open a "
    "support ticket?"
)
RESET = "https://help.acme.example/account/reset"


class Provider:
    """A loopback provider replying with the next scripted deltas to every call."""

    def __init__(self) -> None:
        self.deltas: list[str] = ["Open Settings [1]."]
        self.next: list[list[str]] = []  # replies for the next calls, before `deltas`
        self.server = LoopbackServer(self.handle)
        self.bodies: list[Any] = []

    def handle(self, ex: Exchange) -> None:
        self.bodies.append(ex.json())
        reply(ex, self.next.pop(0) if self.next else self.deltas)


@pytest.fixture
def provider() -> Iterator[Provider]:
    found = Provider()
    with found.server:
        yield found


# Configs as users write them: two deployments of one provider on one key; Azure with its
# resource endpoint; Gemini and Anthropic each behind one key.
CONFIGS = {
    "openai": """\
  - {{name: mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
     base_url: "{base}/v1", context_window: 128000}}
  - {{name: big, provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY,
     base_url: "{base}/v1", context_window: 128000}}
""",
    "azure": """\
  - {{name: azure, provider: azure, model: support-gpt4o-mini, api_key_env: AZURE_OPENAI_API_KEY,
     base_url: "{base}", api_version: "2024-10-21", context_window: 128000}}
""",
    "anthropic": """\
  - {{name: claude, provider: anthropic, model: claude-haiku-4-5, api_key_env: ANTHROPIC_API_KEY,
     base_url: "{base}", context_window: 200000}}
""",
    "gemini": """\
  - {{name: gemini, provider: gemini, model: gemini-2.5-flash, api_key_env: GEMINI_API_KEY,
     base_url: "{base}", context_window: 1000000}}
""",
}
KEYS = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


def setup(
    root: Path, monkeypatch: pytest.MonkeyPatch, base: str, wire: str, extra: str = ""
) -> None:
    monkeypatch.chdir(root)
    for key in KEYS:
        monkeypatch.setenv(key, f"test-key-{key.lower()}")
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(root / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(root / "attempts.jsonl"))
    (root / "support-ask.yaml").write_text(
        "product: Acme Cloud\npolicy: {retries: 0, budget: 20, timeout: 10}\n"
        f"deployments:\n{CONFIGS[wire].format(base=base)}"
        "articles:\n  url_base: https://help.acme.example/kb\n" + extra
    )
    account, billing = root / "kb" / "account", root / "kb" / "billing"
    account.mkdir(parents=True)
    billing.mkdir()
    (account / "reset.md").write_text(
        f"---\ntitle: Reset your password\nurl: {RESET}\n---\n"
        "Open Settings, then Security, and click Reset password to reset your password.\n"
    )
    (billing / "refunds.md").write_text(
        "# Refunds\n\nA refund of an annual plan takes five days to reach your card.\n"
    )


def ask(*args: str) -> Any:
    return run(["ask", *args, "-a", "kb"])


WIRES = sorted(CONFIGS)
STREAMED = [False, True]
ANSWER = [
    "Open Settings, then Reset ",
    "password [",
    "1]. A refund takes five ",
    "days [2][",
    "9].",
]


@pytest.mark.parametrize("stream", STREAMED, ids=["whole", "stream"])
@pytest.mark.parametrize("wire", WIRES)
def test_the_answer_keeps_its_valid_markers_and_lists_its_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider, wire: str, stream: bool
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, wire)
    provider.deltas = ANSWER
    flags = ["--stream"] if stream else []
    out = ask("How do I reset my password?", "-q", *flags)
    assert out.exit_code == 0, out.output
    assert out.stdout == (
        "Open Settings, then Reset password [1]. A refund takes five days [2].\n\n"
        f"Sources:\n[1] Reset your password: {RESET}\n"
        "[2] Refunds: https://help.acme.example/kb/billing/refunds\n"
    )
    # The prompt held the passages under those very markers.
    sent = json.dumps(provider.bodies[0])
    assert "[1] Article: Reset your password" in sent and "[2] Article: Refunds" in sent


@pytest.mark.parametrize("stream", STREAMED, ids=["whole", "stream"])
@pytest.mark.parametrize("wire", WIRES)
def test_the_json_lists_the_citations_and_counts_the_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider, wire: str, stream: bool
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, wire)
    provider.deltas = ANSWER
    out = ask("How do I reset my password?", "--json", *(["--stream"] if stream else []))
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    result = lines[-1]
    assert result["action"] == "answer" and result["handoff"] is None
    assert (
        result["answer"] == "Open Settings, then Reset password [1]. A refund takes five days [2]."
    )
    assert result["citations"] == [
        {"n": 1, "path": "kb/account/reset.md", "title": "Reset your password",
         "heading": None, "url": RESET},
        {"n": 2, "path": "kb/billing/refunds.md", "title": "Refunds", "heading": None,
         "url": "https://help.acme.example/kb/billing/refunds"},
    ]  # fmt: skip
    assert result["citations_dropped"] == 1 and result["grounded"] is True
    assert result["schema_version"] == 1 and result["status"] == "answered"
    if stream:  # the deltas carry exactly the checked answer
        assert "".join(e["text"] for e in lines if e["type"] == "delta") == result["answer"]


HANDOFF = ["[hand", "off] the customer asks", " for a person\n", NOT_COVERED]


@pytest.mark.parametrize("stream", STREAMED, ids=["whole", "stream"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_reply_beginning_with_the_marker_is_a_handoff_and_none_of_it_is_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider, wire: str, stream: bool
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, wire)
    provider.deltas = HANDOFF
    flags = ["--stream"] if stream else []
    out = ask("How do I reset my password?", *flags)
    assert out.exit_code == 5, out.output
    assert out.stdout == NOT_COVERED + "\n"
    assert "handed off (model, exit 5)" in out.stderr
    assert "asks for a person" not in out.stderr  # the model's words stay in the JSON
    out = ask("How do I reset my password?", "--json", *flags)
    assert out.exit_code == 5
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e.get("type") for e in lines] == (["result"] if stream else [None])
    assert lines[-1]["action"] == "handoff"
    assert lines[-1]["handoff"] == {"reason": "model", "detail": "the customer asks for a person"}
    assert lines[-1]["answer"] == NOT_COVERED


def test_an_uncited_answer_is_flagged_or_with_citations_required_handed_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, "anthropic")
    provider.deltas = ["Open Settings, then ", "click Reset password [7]."]
    out = ask("How do I reset my password?", "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert (result["grounded"], result["citations_dropped"]) == (False, 1)
    assert result["answer"] == "Open Settings, then click Reset password."
    assert "grounded: false" in out.stderr
    config = tmp_path / "support-ask.yaml"
    config.write_text(config.read_text() + "answers:\n  require_citation: true\n")
    for flags in ([], ["--stream"]):
        out = ask("How do I reset my password?", *flags)
        assert out.exit_code == 5, out.output
        assert out.stdout == NOT_COVERED + "\n"  # none of the answer was streamed
        assert "handed off (uncited, exit 5)" in out.stderr


def test_citations_none_leaves_the_sources_to_the_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, "gemini", "answers:\n  citations: none\n")
    provider.deltas = ANSWER
    for flags in ([], ["--stream"]):
        out = ask("How do I reset my password?", "-q", *flags)
        assert out.exit_code == 0, out.output
        assert out.stdout == "Open Settings, then Reset password. A refund takes five days.\n"
    result = json.loads(ask("How do I reset my password?", "--json").stdout)
    assert [c["n"] for c in result["citations"]] == [1, 2]


LOCAL = (
    "product: Acme Cloud\n"
    "deployments:\n  - {name: local, provider: local, context_window: 1000000}\n"
)


def test_the_offline_deployment_cites_and_hands_off_by_the_same_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(tmp_path, monkeypatch, "http://127.0.0.1:9", "openai")
    (tmp_path / "support-ask.yaml").write_text(LOCAL)
    out = ask("How do I reset my password?", "-q")
    assert out.exit_code == 0, out.output
    answer, sources = out.stdout.split("\n\n")
    assert answer.endswith(" [1]")
    assert sources == f"Sources:\n[1] Reset your password: {RESET}\n"
    # A word of the question is there, but not enough of it: handed off before the
    # offline deployment is asked, as before any other.
    out = ask("Can I pay for a refund with bitcoin?", "--json")
    assert out.exit_code == 5, out.output
    result = json.loads(out.stdout)
    assert result["handoff"]["reason"] == "not_covered" and result["answer"] == NOT_COVERED
    assert result["attempts"] == [] and result["deployment"] is None
    # Past the team's lower floor, the offline deployment answers: it hands off by the
    # floor the team set, not a bar of its own.
    config = tmp_path / "support-ask.yaml"
    config.write_text(LOCAL + "articles:\n  min_relevance: 0.1\n")
    out = ask("Can I pay for a refund with bitcoin?", "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert (result["action"], result["deployment"]) == ("answer", "local")
    assert [c["path"] for c in result["citations"]] == ["kb/billing/refunds.md"]


def test_batch_records_carry_the_action_and_the_summary_counts_handoffs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, "openai")
    provider.next = [ANSWER, HANDOFF]
    (tmp_path / "tickets.jsonl").write_text(
        '{"id": "T-1", "question": "How do I reset my password?"}\n'
        '{"id": "T-2", "question": "How do I get a refund?"}\n'
    )
    out = run(["batch", "tickets.jsonl", "-a", "kb", "-j", "1"])
    assert out.exit_code == 5, out.output
    records = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert records["T-1"]["action"] == "answer"
    assert [c["n"] for c in records["T-1"]["citations"]] == [1, 2]
    assert records["T-2"]["handoff"]["reason"] == "model"
    assert records["T-2"]["answer"] == NOT_COVERED
    assert "1 answered, 1 handed off, 0 refused" in out.stderr


def log_lines(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "attempts.jsonl").read_text().splitlines()]


def test_the_log_records_the_action_never_the_answer_and_stats_reports_deflection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, "openai")
    provider.deltas = ["Open Settings [1]. Customer jane@example.com asked."]
    assert ask("How do I reset my password?", "-q").exit_code == 0
    provider.deltas = ["[handoff] jane@example.com wants a person\n", NOT_COVERED]
    assert ask("How do I reset my password?", "-q").exit_code == 5
    logged = (tmp_path / "attempts.jsonl").read_text()
    assert "jane@example.com" not in logged and "Open Settings" not in logged
    facts = [(line["action"], line["handoff"], line["served_by"]) for line in log_lines(tmp_path)]
    assert facts == [("answer", None, "mini"), ("handoff", "model", "mini")]
    out = run(["stats", "--json"])
    assert out.exit_code == 0, out.output
    stats = json.loads(out.stdout)
    assert stats["deflection"] == {
        "questions": 2, "answered": 1, "handoff": 1, "refused": 0,
        "answered_rate": 0.5, "handoff_rate": 0.5, "refused_rate": 0.0,
    }  # fmt: skip
    (mini,) = [d for d in stats["deployments"] if d["name"] == "mini"]
    assert (mini["deflection"]["answered"], mini["deflection"]["handoff"]) == (1, 1)
    assert [d["questions"] for d in stats["days"]] == [2]
    text = run(["stats"]).stdout
    assert "deflection: answered 50% (1), handoff 50% (1), refused 0% (0)" in text
