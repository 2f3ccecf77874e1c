"""`support-ask stats` and `support-ask eval` as a user runs them: exit codes, stdout, stderr.

eval runs end to end against the in-process fake providers (`--simulate`): the real
engine, adapters and classifier, no network, virtual time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.runtime.observe import CHECK_FAILED
from cli.shell.root import build_app
from gateway.observe.attemptlog import format_time

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")

CONFIG = """\
product: Acme Cloud
policy: {retries: 1, backoff_base: 1.0, budget: 30}
deployments:
  - {name: primary, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
     context_window: 128000}
  - {name: fallback, provider: anthropic, model: claude-haiku-4-5,
     api_key_env: ANTHROPIC_API_KEY, context_window: 200000}
  - {name: local, provider: local, context_window: 1000000}
long_context:
  {name: long, provider: gemini, model: gemini-2.5-pro, api_key_env: GEMINI_API_KEY,
   context_window: 1000000}
"""

ARTICLE = """\
# Resetting your password

Open the sign-in page and click Forgot password. Enter your email address and click Send
reset link. The link in the email works once and expires after 60 minutes.
"""


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real key, no user config or log, and a cwd with no support-ask.yaml."""
    for name in (*KEY_VARS, "SUPPORT_ASK_CONFIG", "SUPPORT_ASK_LOG", "SUPPORT_ASK_STATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr


def write_config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "support-ask.test.yaml"
    path.write_text(CONFIG + extra)
    return path


def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    folder.mkdir(exist_ok=True)
    (folder / "password.md").write_text(ARTICLE)
    return folder


# ----------------------------------------------------------------------------- stats


def log_line(minutes_ago: float, qid: str, deployment: str, decision: str, **more: object) -> str:
    line: dict[str, object] = {
        "v": 1,
        "time": format_time(time.time() - minutes_ago * 60),
        "qid": qid,
        "deployment": deployment,
        "attempt": 1,
        "status": 200,
        "error_class": None,
        "decision": decision,
        "wait_s": 0.0,
        "latency_s": 0.5,
        "cooled": False,
        "served_by": deployment,
        "first": "primary",
        "outcome": "answered",
        "routed": "normal",
        "input_tokens": 100,
    }
    line.update(more)
    return json.dumps(line)


def known_log(tmp_path: Path) -> Path:
    """Five answered questions in the last hour, two of them by the fallback; one old."""
    lines = [log_line(10 + n, f"p{n}", "primary", "answered") for n in range(3)]
    for n in range(2):
        lines.append(
            log_line(
                20 + n,
                f"f{n}",
                "primary",
                "fail_over",
                status=429,
                error_class="rate_limit",
                served_by="fallback",
                cooled=True,
            )
        )
        lines.append(log_line(20 + n, f"f{n}", "fallback", "answered", latency_s=1.5))
    lines.append(log_line(3 * 24 * 60, "old", "fallback", "answered"))  # three days ago
    path = tmp_path / "attempts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_stats_json_figures(tmp_path: Path) -> None:
    code, out, _ = run("stats", "--json", "--log", str(known_log(tmp_path)), "-c", "nope.yaml")
    assert code == 78  # a --config that does not exist is a config error

    config = write_config(tmp_path)
    code, out, err = run("stats", "--json", "--log", str(known_log(tmp_path)), "-c", str(config))
    assert code == 0, err
    data = json.loads(out)
    assert (data["questions"], data["served"], data["served_by_fallback"]) == (5, 5, 2)
    assert data["fallback_share"] == 0.4
    assert data["alert"] is None and data["max_fallback_rate"] is None
    primary, fallback = data["deployments"]
    assert primary["name"] == "primary" and primary["errors"] == {"rate_limit": 2}
    assert primary["cooldowns"] == 2 and primary["served"] == 3
    assert fallback["served"] == 2 and fallback["as_fallback"] == 2
    assert fallback["latency_p50_s"] == 1.5

    code, out, _ = run("stats", "--json", "--since", "7d", "--log", str(known_log(tmp_path)))
    assert code == 0 and json.loads(out)["questions"] == 6


def test_stats_table_for_people(tmp_path: Path) -> None:
    code, out, _ = run(
        "stats", "--log", str(known_log(tmp_path)), "-c", str(write_config(tmp_path))
    )
    assert code == 0
    assert "fallback share 40%: 2 of 5 served by a fallback" in out
    assert "primary" in out and "fallback" in out
    assert "errors at primary: rate_limit 2" in out


def test_fallback_threshold_exit_code(tmp_path: Path) -> None:
    log = str(known_log(tmp_path))
    config = str(write_config(tmp_path))
    code, out, err = run("stats", "--log", log, "-c", config, "--max-fallback-rate", "0.2")
    assert code == CHECK_FAILED == 4
    assert "alert: fallback share 40% is above 20%" in err
    code, _, err = run("stats", "--log", log, "-c", config, "--max-fallback-rate", "0.5")
    assert code == 0 and "alert" not in err

    # The same key in the config, and the flag overriding it.
    strict = str(write_config(tmp_path, "max_fallback_rate: 0.25\n"))
    code, out, _ = run("stats", "--json", "--log", log, "-c", strict)
    assert code == CHECK_FAILED and json.loads(out)["alert"].startswith("fallback share 40%")
    code, _, _ = run("stats", "--log", log, "-c", strict, "--max-fallback-rate", "0.9")
    assert code == 0


def test_stats_log_from_environment_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = known_log(tmp_path)
    configured = write_config(tmp_path, f"log: {{path: {log}}}\n")
    code, out, _ = run("stats", "--json", "-c", str(configured))
    assert code == 0 and json.loads(out)["log"] == str(log)
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp_path / "elsewhere.jsonl"))
    code, out, _ = run("stats", "--json", "-c", str(configured))
    assert code == 0 and json.loads(out)["questions"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "not a time window"),
        (("--max-fallback-rate", "20"), "between 0 and 1"),
    ],
)
def test_stats_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    code, _, err = run("stats", *args, "-c", str(write_config(tmp_path)))
    assert code == 2 and message in err


def test_stats_with_no_log_yet_a_missing_one_and_an_unreadable_one(tmp_path: Path) -> None:
    config = str(write_config(tmp_path))
    code, out, _ = run("stats", "-c", config)  # the default log: nobody has asked yet
    assert code == 0 and "no questions in the last 24h" in out
    missing = tmp_path / "none.jsonl"
    code, out, err = run("stats", "--log", str(missing), "-c", config)
    assert code == 66 and out == ""  # a mistyped --log is not "no questions"
    assert f"the attempt log {missing} does not exist" in err
    code, _, err = run("stats", "--log", str(tmp_path), "-c", config)
    assert code == 66 and "cannot read the attempt log" in err


def test_ask_logs_and_warns_when_fallbacks_serve_recent_traffic(tmp_path: Path) -> None:
    """No keys: the local deployment, a fallback, serves everything. After enough
    questions, every ask warns, and stats agrees."""
    config = str(write_config(tmp_path, "max_fallback_rate: 0.2\n"))
    log = tmp_path / "logs" / "attempts.jsonl"
    articles = str(kb(tmp_path))
    question = "How do I reset my password? I forgot it."
    errs = []
    for _ in range(5):
        code, out, err = run(question, "-a", articles, "-c", config, "--log", str(log))
        assert code == 0 and out.strip()
        errs.append(err)
    assert "fallback share" not in errs[0]  # one question is no trend
    assert "fallback share 100% is above 20%" in errs[-1]
    assert "forgot it" not in log.read_text()  # the question stays out of the log

    code, out, _ = run("stats", "--json", "--log", str(log), "-c", config)
    data = json.loads(out)
    assert code == CHECK_FAILED and (data["questions"], data["served_by_fallback"]) == (5, 5)
    local = next(d for d in data["deployments"] if d["name"] == "local")
    assert local["served"] == 5

    code, _, _ = run(question, "-a", articles, "-c", config, "--log", str(log), "--no-log")
    assert len(log.read_text().splitlines()) == 5 * 3  # --no-log appended nothing


# ------------------------------------------------------------------------------ eval


QUESTIONS_YAML = """\
- question: How do I reset my password?
  covered: true
  expect_contains: [ticket]
- question: Do you sell printers?
  covered: false
"""


def test_eval_against_simulated_providers_json(tmp_path: Path) -> None:
    questions = tmp_path / "questions.yaml"
    questions.write_text(QUESTIONS_YAML)
    code, out, err = run(
        "eval", str(questions), "-a", str(kb(tmp_path)), "-c", str(write_config(tmp_path)),
        "--simulate", "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert data["deployments"] == ["primary", "fallback", "local", "long"]
    first, second = data["questions"]
    # Every deployment answered the first question, each alone, with its own answer.
    assert [a["status"] for a in first["answers"]] == ["answered"] * 4
    assert first["answers"][0]["answer"].startswith("[primary]")
    assert first["answers"][3]["answer"].startswith("[long]")
    # The simulated LLMs answer from the articles as the prompt asks: like the offline one,
    # they decline the uncovered question.
    coverage = {
        a["deployment"]: next(c for c in a["checks"] if c["rule"] == "coverage")["passed"]
        for a in second["answers"]
    }
    assert coverage == {"primary": True, "fallback": True, "local": True, "long": True}
    assert data["summary"]["local"]["rules"]["coverage"] == {"passed": 2, "failed": 0}
    # Every answer quotes the article, which never mentions a ticket.
    assert data["summary"]["local"]["rules"]["expected"] == {"passed": 0, "failed": 1}
    assert data["summary"]["primary"]["rules"]["expected"] == {"passed": 0, "failed": 1}
    assert data["violations"] == 4 and data["passed"] is False
    assert code == CHECK_FAILED and "4 rule violation(s)" in err


def test_eval_passes_when_every_rule_holds(tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text("# smoke\nHow do I reset my password?\nCan I change my email?\n")
    code, out, err = run(
        "eval", str(questions), "-a", str(kb(tmp_path)), "-c", str(write_config(tmp_path)),
        "--simulate", "-d", "primary", "-d", "fallback",
    )  # fmt: skip
    assert code == 0, err
    assert "How do I reset my password?" in out and "Can I change my email?" in out
    assert "[primary] From" in out  # answer text printed as written, brackets and all
    assert "eval: every rule passed" in out
    assert "long" not in out.split("summary")[1]


def test_eval_failures_are_violations_and_retried_first(tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text("How do I reset my password?\n")
    code, out, _ = run(
        "eval", str(questions), "-a", str(kb(tmp_path)), "-c", str(write_config(tmp_path)),
        "--simulate", "--fail", "fallback=503x*", "--fail", "primary=refusal", "--json",
    )  # fmt: skip
    assert code == CHECK_FAILED
    answers = {a["deployment"]: a for a in json.loads(out)["questions"][0]["answers"]}
    assert answers["fallback"]["status"] == "failed" and answers["fallback"]["calls"] == 2
    assert answers["primary"]["status"] == "refused"
    assert answers["local"]["passed"] and answers["long"]["passed"]


def test_eval_with_no_usable_deployment(tmp_path: Path) -> None:
    config = tmp_path / "keyed.yaml"
    config.write_text(
        "product: Acme\ndeployments:\n"
        "  - {name: primary, provider: openai, model: m, api_key_env: OPENAI_API_KEY,"
        " context_window: 8000}\n"
    )
    questions = tmp_path / "q.txt"
    questions.write_text("How do I reset my password?\n")
    code, _, err = run("eval", str(questions), "-a", str(kb(tmp_path)), "-c", str(config))
    assert code == 69 and "no deployment could be asked" in err and "OPENAI_API_KEY" in err


def test_eval_with_deployments_that_could_not_be_asked_is_not_a_pass(tmp_path: Path) -> None:
    config = tmp_path / "half.yaml"
    config.write_text(
        "product: Acme\ndeployments:\n"
        "  - {name: primary, provider: openai, model: m, api_key_env: OPENAI_API_KEY,"
        " context_window: 128000}\n"
        "  - {name: local, provider: local, context_window: 1000000}\n"
    )
    questions = tmp_path / "q.txt"
    questions.write_text("How do I reset my password?\nCan I change my email?\n")
    base = ("eval", str(questions), "-a", str(kb(tmp_path)), "-c", str(config))

    code, out, err = run(*base)
    assert code == 69, err
    assert "every rule passed" not in out
    assert "eval: not a pass: 2 of 4 answers not asked; no violation in the 2 asked" in out
    assert "2 of 4 answers could not be asked: primary (2)" in err
    assert "--skip-unconfigured" in err
    code, out, _ = run(*base, "--json")
    data = json.loads(out)
    assert code == 69 and data["passed"] is False and data["not_run"] == 2

    # Left out on purpose, it passes on what was asked.
    for leave_out in (("--skip-unconfigured",), ("-d", "local")):
        code, out, err = run(*base, *leave_out)
        assert code == 0, err
        assert "eval: every rule passed in the 2 answers checked" in out
    assert "not evaluated: primary (OPENAI_API_KEY not set)" in run(*base, "--skip-unconfigured")[2]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--fail", "primary=429"), 2, "--fail only makes sense with --simulate"),
        (("--simulate", "-d", "nope"), 2, "no deployment named 'nope'"),
        (("--simulate", "--fail", "local=429"), 2, "local"),
    ],
)
def test_eval_usage_errors(tmp_path: Path, args: tuple[str, ...], code: int, message: str) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("How do I reset my password?\n")
    config = str(write_config(tmp_path))
    got, _, err = run("eval", str(questions), "-a", str(kb(tmp_path)), "-c", config, *args)
    assert got == code and message in err


def test_eval_without_questions(tmp_path: Path) -> None:
    config = str(write_config(tmp_path))
    code, _, err = run("eval", str(tmp_path / "missing.txt"), "-c", config)
    assert code == 66 and "cannot read questions file" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing yet\n")
    code, _, err = run("eval", str(empty), "-c", config)
    assert code == 66 and "no questions in" in err
