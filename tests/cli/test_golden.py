"""`support-ask eval --golden FILE --offline` as a team runs it in CI: a golden file over a
generated help centre big enough to be ranked, the sweep, the thresholds' exit 4, and the
bad files a team writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.shell.root import build_app
from tests.support.helpcentre import write_billing_centre
from tests.support.paths import REPO

GOLDEN = """\
- question: How do I get a refund of the charge?
  articles: [billing/refunds.md]
- question: Where do I download an invoice PDF?
  articles: [billing/invoices.md]
- question: Can I get a refund of an invoice PDF?
  articles: [billing/refunds.md, billing/invoices.md]
- question: Can I pay with bitcoin through Coinbase?
  answerable: false
- question: How do I book a table at the restaurant?
  answerable: false
"""
CONFIG = """\
product: Acme Cloud
deployments:
  - {name: local, provider: local, context_window: 1000000}
articles:
  max_tokens: 600
"""


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SUPPORT_ASK_CONFIG", "SUPPORT_ASK_LOG", "SUPPORT_ASK_STATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def centre(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_billing_centre(tmp_path_factory.mktemp("centre"))


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr


def golden(tmp_path: Path, text: str = GOLDEN, name: str = "golden.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def config(tmp_path: Path, floor: float | None = None) -> str:
    path = tmp_path / "support-ask.yaml"
    path.write_text(CONFIG + (f"  min_relevance: {floor}\n" if floor is not None else ""))
    return str(path)


def ask_golden(tmp_path: Path, centre: Path, *more: str, floor: float | None = None) -> tuple:
    return run("eval", "--golden", golden(tmp_path), "-a", str(centre), "--offline",
               "-c", config(tmp_path, floor), *more)  # fmt: skip


def test_each_question_and_the_totals_in_json(tmp_path: Path, centre: Path) -> None:
    code, out, _ = ask_golden(tmp_path, centre, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["floor"] == 0.35 and data["budget"] == 600 and data["offline"] is True
    by_line = {q["line"]: q for q in data["questions"]}
    assert sorted(by_line) == [1, 3, 5, 7, 9]
    assert by_line[1]["outcome"] == "found" and by_line[1]["found"].endswith("billing/refunds.md")
    assert by_line[3]["outcome"] == by_line[5]["outcome"] == "found"
    assert 0.35 < by_line[5]["relevance"] < 1.0  # its words are split between two articles
    assert by_line[7]["outcome"] == by_line[9]["outcome"] == "handed_off"
    assert by_line[7]["in_prompt"] is None and by_line[7]["articles"] == []
    assert data["totals"] == {
        "floor": 0.35,
        "answerable": 3,
        "unanswerable": 2,
        "recall": 1.0,
        "handoff_recall": 1.0,
        "false_handoffs": 0.0,
        "found": 3,
        "handed_off": 2,
        "false_handoff_count": 0,
    }
    assert data["passed"] is True and data["failures"] == [] and "sweep" not in data


def test_the_configured_floor_is_the_one_measured(tmp_path: Path, centre: Path) -> None:
    code, out, _ = ask_golden(tmp_path, centre, "--json", floor=1.0)
    data = json.loads(out)
    assert code == 0 and data["floor"] == 1.0
    handed = [q for q in data["questions"] if q["handoff"]]
    assert len(handed) == sum(1 for q in data["questions"] if q["relevance"] < 1.0)


def test_the_sweep_shows_what_each_floor_would_do(tmp_path: Path, centre: Path) -> None:
    code, out, _ = ask_golden(tmp_path, centre, "--json", "--sweep")
    floors = [row["floor"] for row in json.loads(out)["sweep"]]
    assert floors[0] == 0.0 and floors[-1] == 1.0 and 0.35 in floors
    by_floor = {row["floor"]: row for row in json.loads(out)["sweep"]}
    assert by_floor[0.0]["handoff_recall"] == 0.0 and by_floor[0.35]["handoff_recall"] == 1.0
    code, text, _ = ask_golden(tmp_path, centre, "--sweep")
    assert code == 0
    assert "what each floor would do" in text and "0.35 (set)" in text
    assert "eval --golden: floor 0.35: recall 100.0% (3/3), handoff recall 100.0% (2/2)" in text


def test_the_plain_report_names_each_outcome(tmp_path: Path, centre: Path) -> None:
    code, out, err = ask_golden(tmp_path, centre, floor=1.0)
    assert code == 0
    assert "How do I book a table at the restaurant?" in out and "handed off" in out
    assert "false handoff" in out  # the question split between two articles
    assert "judging" not in err  # no bar off a terminal


@pytest.mark.parametrize(
    ("flags", "floor", "missed"),
    [
        (
            ("--max-false-handoffs", "0"),
            1.0,
            "false handoffs 33.3% is above --max-false-handoffs 0.0%",
        ),
        (("--min-recall", "0.9"), 1.0, "recall 66.7% is below --min-recall 90.0%"),
        (
            ("--min-handoff-recall", "0.9"),
            0.0,
            "handoff recall 0.0% is below --min-handoff-recall 90.0%",
        ),
    ],
)
def test_a_missed_threshold_exits_4_saying_which(
    tmp_path: Path, centre: Path, flags: tuple[str, ...], floor: float, missed: str
) -> None:
    code, out, err = ask_golden(tmp_path, centre, "--json", *flags, floor=floor)
    assert code == 4, err
    assert missed in err
    assert json.loads(out)["failures"] == [missed] and json.loads(out)["passed"] is False


def test_thresholds_that_hold_exit_0(tmp_path: Path, centre: Path) -> None:
    code, _, err = ask_golden(tmp_path, centre, "--min-recall", "1", "--min-handoff-recall",
                              "0.9", "--max-false-handoffs", "0.05")  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    ("text", "name", "code", "where"),
    [
        ("- question: q\n  articles: [a.md]\n- question: How do I get a refund?\n",
         "golden.yaml", 65, "golden.yaml:3: no `articles` for an answerable question"),
        ('{"question": "q", "articles": ["a.md"]}\nnot json\n', "golden.jsonl", 65,
         "golden.jsonl:2: not a JSON object"),
        ("- question: q\n  artcles: [a.md]\n", "golden.yaml", 65, "golden.yaml:1: unknown key"),
    ],
)  # fmt: skip
def test_a_bad_golden_file_exits_65_naming_its_line(
    tmp_path: Path, centre: Path, text: str, name: str, code: int, where: str
) -> None:
    got, out, err = run("eval", "--golden", golden(tmp_path, text, name), "-a", str(centre),
                        "--offline", "-c", config(tmp_path))  # fmt: skip
    assert got == code and out == ""
    assert where in err and "Traceback" not in err
    assert "fix:" in err


def test_a_missing_golden_file_exits_66(tmp_path: Path, centre: Path) -> None:
    got, _, err = run("eval", "--golden", str(tmp_path / "nope.yaml"), "-a", str(centre),
                      "--offline", "-c", config(tmp_path))  # fmt: skip
    assert got == 66 and "cannot read golden file" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--golden", "g.yaml", "--offline"), "pass --articles FOLDER"),
        (("q.txt", "--golden", "g.yaml", "-a", "kb", "--offline"), "cannot go together"),
        (("q.txt", "--offline"), "--offline only goes with --golden FILE"),
        (("q.txt", "--min-recall", "0.9"), "--min-recall only goes with --golden FILE"),
        ((), "eval needs a questions file, or --golden FILE"),
        (("--golden", "g.yaml", "-a", "kb", "--offline", "--min-recall", "90"),
         "--min-recall 90 is not a share"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_with_the_fix(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, _, err = run("eval", *args, "-c", config(tmp_path))
    assert code == 2 and message in err, err


def test_the_shipped_golden_set_runs_over_examples_kb(tmp_path: Path) -> None:
    code, out, err = run("eval", "--golden", str(REPO / "examples" / "golden.yaml"), "-a",
                         str(REPO / "examples" / "kb"), "--offline", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["totals"]["unanswerable"] >= 5 and data["totals"]["answerable"] >= 10
    assert all(q["articles"] or not q["answerable"] for q in data["questions"])
