"""`support-ask batch` over a help centre too big to read whole: every question gets the
passages `ask` would send it (in its record's `articles`, and in what the server got),
from one index opened once, by concurrent workers; a selection too big for a deployment's
window is compacted, not refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_batch import Providers, batch, records, workdir
from tests.support.helpcentre import age, write_centre

pytestmark = pytest.mark.slow  # a support-ask batch process per test

REFUND = "Write to billing@acme.example within 30 days of the charge to get your money back."
EXPORT = "Open Settings, choose Data, then Export archive to download every mailbox as mbox."
QUESTIONS = {
    "R": "How do I get a refund for my annual plan?",
    "E": "How can I export my mailbox data?",
}


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers(delay=0.05)  # held back so that the workers overlap
    with p.server:
        yield p
    assert not p.server.errors


@pytest.fixture
def work(tmp_path: Path, providers: Providers) -> Path:
    workdir(tmp_path, providers)
    manual = tmp_path / "manual"
    write_centre(manual, 60)  # ~1 MB of HTML: past what is read whole, so it is indexed
    refund = f"# Refunds for annual plans\n\n## Asking for a refund\n\n{REFUND}\n"
    age(manual / "refunds.md", refund)
    age(manual / "export.md", f"# Exporting your mailbox\n\n## Export archive\n\n{EXPORT}\n")
    lines = [
        json.dumps({"id": f"{key}{n}", "question": QUESTIONS[key]})
        for n in range(4)
        for key in QUESTIONS
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def prompts(providers: Providers) -> list[str]:
    return [ex.json()["messages"][0]["content"] for ex in providers.server.exchanges]


def test_each_question_of_a_concurrent_batch_is_sent_only_its_passages(
    work: Path, providers: Providers
) -> None:
    run = batch(work, "in.jsonl", "-a", "manual", "-j", "4", "--max-article-tokens", "1500")

    assert run.returncode == 0, run.stderr
    assert "indexed 62 article files" in run.stderr  # built once, before the first question
    assert run.stderr.count("indexed") == 1
    got = {r["id"]: r for r in records(run.stdout)}
    assert len(got) == 8 and all(r["status"] == "answered" for r in got.values())
    for key, needle_path in (("R", "refunds.md"), ("E", "export.md")):
        sent = [got[f"{key}{n}"]["articles"] for n in range(4)]
        assert all(s == sent[0] for s in sent)  # every worker selected alike
        first = sent[0][0]  # type: ignore[index]
        assert first["path"] == f"manual/{needle_path}"  # as given, as `ask` says it
        assert first["score"] > 0
        assert 0 < sum(a["tokens"] for a in sent[0]) <= 1500  # type: ignore[union-attr]
        assert len(sent[0]) < 62  # type: ignore[arg-type]
    assert providers.peak > 1  # the questions really were asked concurrently
    received = prompts(providers)
    assert len(received) == 8
    assert sum(REFUND in p for p in received) == 4 and sum(EXPORT in p for p in received) == 4
    # What reached the server is a selection, not the manual: far below its ~250k tokens.
    assert max(len(p) for p in received) < 1500 * 8


def test_a_selection_too_big_for_the_window_is_compacted_not_refused(
    work: Path, providers: Providers
) -> None:
    config = work / "support-ask.yaml"
    config.write_text(
        config.read_text()
        .replace("context_window: 128000", "context_window: 2500")
        .replace("context_window: 200000", "context_window: 2500")
    )

    run = batch(work, "in.jsonl", "-a", "manual", "-j", "4", "--max-article-tokens", "20000")

    assert run.returncode == 0, run.stderr
    got = records(run.stdout)
    assert len(got) == 8
    for record in got:
        assert record["status"] == "answered" and record["deployment"] == "primary"
        sent = record["articles"]
        assert 0 < sum(a["tokens"] for a in sent) < 2500  # type: ignore[union-attr]
    assert sum(REFUND in p for p in prompts(providers)) == 4
