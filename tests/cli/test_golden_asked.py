"""`support-ask eval --golden FILE` with the deployments asked: each question asked as `ask`
asks it, against providers on 127.0.0.1 in their own wire formats, and judged per question
and in total: its action and handoff, whether its answer cites an answering article,
whether a citation was dropped."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.shell.root import build_app
from tests.support.helpcentre import write_billing_centre
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.wire_replies import reply

GOLDEN = """\
- question: How do I get a refund of the charge?
  articles: [billing/refunds.md]
- question: Where do I download an invoice PDF?
  articles: [billing/invoices.md]
- question: Can I get a refund of an invoice PDF?
  articles: [billing/refunds.md]
- question: Can billing refund the charge within 30 days?
  articles: [billing/refunds.md]
- question: Can I pay with bitcoin through Coinbase?
  answerable: false
"""
# Two deployments of one provider on one key, as the sample config's shape is not.
CONFIGS = {
    "openai": """\
  - {{name: mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
     base_url: "{base}/v1", context_window: 128000}}
  - {{name: big, provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY,
     base_url: "{base}/v1", context_window: 128000}}
""",
    "anthropic": """\
  - {{name: claude, provider: anthropic, model: claude-haiku-4-5, api_key_env: ANTHROPIC_API_KEY,
     base_url: "{base}", context_window: 200000}}
""",
}


def markers(prompt: str) -> dict[str, str]:
    """Each article's path in the prompt and the marker of its first passage."""
    found = re.findall(r"Source: ([^\n]*)\n\n(\[\d+\])", prompt)
    return {path: marker for path, marker in reversed(found)}


def marker_of(prompt: str, path: str) -> str:
    """The marker of the first passage of the article at `path`, as the prompt shows it."""
    found = [m for p, m in markers(prompt).items() if p.endswith(path)]
    assert found, f"{path} is not in the prompt"
    return found[0]


class Support:
    """Answers as a model following the prompt might: the refund question citing the
    refunds passage; the invoice one citing the invoices passage and a passage never
    sent; the refund of an invoice citing the invoices passage only (not what answers it);
    the last one handing off."""

    def __init__(self) -> None:
        self.server = LoopbackServer(self.handle)
        self.questions: list[str] = []
        self.fail = False

    def handle(self, ex: Exchange) -> None:
        body = json.dumps(ex.json())
        if self.fail:
            ex.respond(401, {"error": {"message": "Incorrect API key", "type": "auth"}})
            return
        prompt = body.replace("\\n", "\n")
        if "refund of the charge" in body:
            self.questions.append("refund")
            reply(ex, [f"Write to billing within 30 days {marker_of(prompt, 'refunds.md')}."])
        elif "download an invoice" in body:
            self.questions.append("invoice")
            reply(ex, [f"Open Billing {marker_of(prompt, 'invoices.md')}, then PDF [42]."])
        elif "refund of an invoice" in body:
            self.questions.append("mixed")
            reply(ex, [f"Open Billing and click Download PDF {marker_of(prompt, 'invoices.md')}."])
        else:
            self.questions.append("person")
            reply(ex, ["[handoff] needs a person\n", "I could not find that."])


@pytest.fixture
def support() -> Iterator[Support]:
    s = Support()
    with s.server:
        yield s


@pytest.fixture(scope="module")
def centre(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_billing_centre(tmp_path_factory.mktemp("centre"))


def run_golden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str, wire: str, *more: str
) -> tuple[int, str, str]:
    for name in ("SUPPORT_ASK_CONFIG", "SUPPORT_ASK_LOG", "SUPPORT_ASK_STATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-anthropic")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "golden.yaml").write_text(GOLDEN)
    (tmp_path / "support-ask.yaml").write_text(
        "product: Acme Cloud\npolicy: {retries: 0, budget: 20, timeout: 10}\n"
        f"deployments:\n{CONFIGS[wire].format(base=base)}articles:\n  max_tokens: 600\n"
    )
    return run_cli("eval", "--golden", "golden.yaml", "-c", "support-ask.yaml", *more)


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("wire", sorted(CONFIGS))
def test_each_answer_is_judged_by_its_action_and_citations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, support: Support, centre: Path, wire: str
) -> None:
    code, out, err = run_golden(tmp_path, monkeypatch, support.server.url, wire,
                                "-a", str(centre), "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["offline"] is False
    asked = [q["asked"] for q in data["questions"]]
    assert [a["action"] for a in asked] == ["answer", "answer", "answer", "handoff", "handoff"]
    assert [a["handoff"] for a in asked] == [None, None, None, "model", "not_covered"]
    assert [a["cites_answering"] for a in asked] == [True, True, False, None, None]
    assert [a["citations_dropped"] for a in asked] == [0, 1, 0, 0, 0]
    assert asked[0]["cited"][0].endswith("billing/refunds.md")
    assert asked[2]["cited"][0].endswith("billing/invoices.md")
    assert asked[4]["deployment"] is None  # not covered: no deployment was asked
    # never the bitcoin question
    assert support.questions == ["refund", "invoice", "mixed", "person"]
    assert data["asked"] == {
        "answered": 3,
        "handoffs": {"model": 1, "not_covered": 1},
        "unanswered": 0,
        "handoff_recall": 1.0,
        "false_handoffs": 0.25,
        "cites_answering": round(2 / 3, 4),
        "cites_answering_count": 2,
        "answered_answerable": 3,
        "answers_with_dropped_citations": 1,
    }
    assert data["totals"]["recall"] == 1.0  # the offline figures stay beside them


def test_the_table_shows_each_answer_and_the_totals_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, support: Support, centre: Path
) -> None:
    code, out, err = run_golden(tmp_path, monkeypatch, support.server.url, "openai",
                                "-a", str(centre))  # fmt: skip
    assert code == 0, err
    assert "golden set, deployments asked" in out
    assert "answer, cites it, 1 dropped" in out and "answer, cites other articles" in out
    assert "handoff (not_covered)" in out and "handoff (model)" in out
    assert (
        "asked: 3 answered, handoffs model 1, not_covered 1, 0 unanswered; handoff recall "
        "100.0% (1/1), false handoffs 25.0% (1/4), cited an answering article 66.7% (2/3), "
        "answers with a dropped citation 1"
    ) in " ".join(out.split())


def test_questions_nothing_answered_fail_the_eval_with_exit_69(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, support: Support, centre: Path
) -> None:
    support.fail = True
    code, out, err = run_golden(tmp_path, monkeypatch, support.server.url, "openai",
                                "-a", str(centre), "--json")  # fmt: skip
    assert code == 69, err
    assert json.loads(out)["asked"]["unanswered"] == 4  # the not_covered one needs no model
    assert "4 of 5 questions got no answer and no handoff" in err
    assert "--offline" in err


def test_offline_asks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, support: Support, centre: Path
) -> None:
    code, out, _ = run_golden(tmp_path, monkeypatch, support.server.url, "openai",
                              "-a", str(centre), "--offline", "--json")  # fmt: skip
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    assert data["asked"] is None and "asked" not in data["questions"][0]
    assert support.questions == []
