"""simulate, cooldowns and config check through Typer's runner, with the real engine,
adapters, classifier and state store (simulate's fake providers, virtual time)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

from gateway.model import ErrorKind
from gateway.state.file import FileStore
from tests.support.cli_runner import run
from tests.support.paths import REPO

NAN = math.nan

CONFIG = """\
product: Acme Cloud
policy:
  retries: 2
  backoff_base: 1.0
  backoff_max: 8.0
  cooldown: 60
  budget: 30
  timeout: 20
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    base_url: http://127.0.0.1:9/v1
    context_window: 128000
  - name: fallback
    provider: anthropic
    model: claude-haiku-4-5
    api_key_env: ANTHROPIC_API_KEY
    context_window: 200000
    policy:
      retries: 1
  - name: local
    provider: local
    context_window: 1000000
"""

SECRET = "sk-real-key-MUST-NOT-LEAK-0987654321"


@pytest.fixture
def cli_config() -> str:
    return CONFIG


# --- simulate ------------------------------------------------------------------------------


def test_simulate_shows_the_waits_it_would_have_taken_without_taking_them(home: Path) -> None:
    started = time.monotonic()
    out = run(["simulate", "--fail", "primary=429x3@2s", "-a", "kb"])
    assert time.monotonic() - started < 2  # two 2 s waits, in virtual time
    assert out.exit_code == 0
    assert out.stdout.startswith("[fallback]")
    table = out.stderr
    assert table.count("rate_limit") >= 3
    # Each Retry-After of 2 s is waited with its jitter: up to a tenth more.
    assert re.search(r"\b2\.[0-2]s", table) and "fail_over" in table and "answered" in table
    assert "answered by fallback (anthropic claude-haiku-4-5) after 4 attempts" in table
    assert re.search(r"waited 4\.[0-4]s", table)


def test_simulate_second_request_skips_the_cooled_down_deployment(home: Path) -> None:
    out = run(["simulate", "-f", "primary=503x*", "--requests", "2", "-a", "kb"])
    assert out.exit_code == 0
    first, second = out.stderr.split("request 2/2")
    assert "overloaded" in first
    assert "skipped" in second and "cooling down" in second
    assert "calls received: primary 3, fallback 2" in out.stderr  # none to primary the 2nd time
    assert out.stdout.count("[fallback]") == 2


def test_simulate_json_prints_one_object_per_request(home: Path) -> None:
    out = run(["simulate", "-f", "primary=401", "-n", "2", "--json", "-q", "-a", "kb"])
    assert out.exit_code == 0
    first, second = (json.loads(line) for line in out.stdout.splitlines())
    assert first["deployment"] == second["deployment"] == "fallback"
    assert [a["error_class"] for a in first["attempts"]][:1] == ["auth"]
    assert second["attempts"][0]["decision"] == "skipped"
    assert out.stderr == ""


@pytest.mark.parametrize(
    ("fault", "code", "stdout"),
    [
        ("primary=refusal", 3, "I'm sorry"),
        ("primary=400", 65, ""),
    ],
)
def test_simulate_fatal_faults_stop_at_once(home: Path, fault: str, code: int, stdout: str) -> None:
    out = run(["simulate", "-f", fault, "-a", "kb", "--json"])
    assert out.exit_code == code
    obj = json.loads(out.stdout)
    assert [a["deployment"] for a in obj["attempts"]] == ["primary"]  # no failover
    assert (obj["answer"] or "").startswith(stdout)


def test_simulate_stream_cut_keeps_the_text_and_exits_69(home: Path) -> None:
    out = run(["simulate", "-f", "primary=cut:2", "--stream", "-a", "kb"])
    assert out.exit_code == 69
    assert out.stdout.startswith("[primary]") and out.stdout.endswith("\n")
    assert "stopped" in out.stderr


@pytest.mark.parametrize("stream", [[], ["--stream"]], ids=["whole", "stream"])
def test_simulate_slow_first_token_fails_over_at_the_deadline(
    home: Path, stream: list[str]
) -> None:
    out = run(["simulate", "-f", "primary=slow:12s", "--json", "-q", "-a", "kb", *stream])
    assert out.exit_code == 0
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["deployment"] == "fallback"
    first = result["attempts"][0]
    assert (first["deployment"], first["decision"], first["elapsed_s"]) == (
        "primary",
        "fail_over",
        10.0,
    )
    assert "first_token_timeout (10 s)" in first["detail"]


def test_simulate_stall_after_text_stops_at_the_stall_deadline(home: Path) -> None:
    out = run(["simulate", "-f", "primary=stall:2", "--stream", "-a", "kb"])
    assert out.exit_code == 69
    assert out.stdout.startswith("[primary]")
    assert "stopped" in out.stderr and "stall_timeout (5 s)" in out.stderr


def test_simulate_blocked_prompt_prints_nothing_and_says_the_filter_blocked_it(
    home: Path,
) -> None:
    out = run(["simulate", "-f", "primary=blocked", "-a", "kb"])
    assert out.exit_code == 3
    assert out.stdout == ""
    assert "the provider's content filter blocked this request" in out.stderr
    assert "invalid_prompt" in out.stderr
    data = json.loads(run(["simulate", "-f", "primary=blocked", "-a", "kb", "--json"]).stdout)
    assert data["answer"] is None
    assert data["refusal"]["by"] == "provider"


def test_simulate_model_refusal_is_on_stdout_and_says_who_refused(home: Path) -> None:
    data = json.loads(run(["simulate", "-f", "primary=refusal", "-a", "kb", "--json"]).stdout)
    assert data["refusal"] == {"by": "model", "message": data["answer"]}
    assert data["finish_reason"] == "stop"


def test_simulate_cut_short_answer_fails_over_to_a_whole_one(home: Path) -> None:
    data = json.loads(run(["simulate", "-f", "primary=limit", "-a", "kb", "--json"]).stdout)
    assert (data["status"], data["deployment"], data["finish_reason"]) == (
        "answered",
        "fallback",
        "end_turn",
    )
    assert data["attempts"][0]["error_class"] == "output_limit"


def test_simulate_cut_short_stream_keeps_the_text_and_exits_69(home: Path) -> None:
    out = run(["simulate", "-f", "primary=limit", "--stream", "-a", "kb"])
    assert out.exit_code == 69
    assert out.stdout.startswith("[primary]")
    assert "cut short by the output limit (finish_reason length)" in out.stderr
    assert "raise max_output_tokens" in out.stderr


@pytest.mark.parametrize("stream", [[], ["--stream"]], ids=["whole", "stream"])
def test_simulate_empty_answer_is_never_printed_as_an_answer(home: Path, stream: list[str]) -> None:
    out = run(["simulate", "-f", "primary=empty", "-f", "fallback=empty", "-a", "kb", *stream])
    assert out.stdout.strip() and not out.stdout.startswith("[")  # the offline local answered
    assert "empty" in out.stderr


def test_simulate_restart_protocol_one_restart_then_the_next_attempt_from_its_start(
    home: Path,
) -> None:
    out = run(
        ["simulate", "-f", "primary=cut:3x1", "-a", "kb", "--stream", "--json", "--allow-restart"]
    )
    assert out.exit_code == 0
    events = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    at = kinds.index("restart")
    assert kinds == ["delta"] * 3 + ["restart"] + ["delta"] * (len(kinds) - 5) + ["result"]
    assert events[at]["deployment"] == "primary" and events[at]["reason"]
    # what a consumer shows after the restart is exactly the final answer
    shown = "".join(e["text"] for e in events[at + 1 : -1])
    assert shown == events[-1]["answer"] and events[-1]["status"] == "answered"
    assert [a["decision"] for a in events[-1]["attempts"]] == ["retry", "answered"]


def test_allow_restart_without_stream_json_is_a_usage_error(home: Path) -> None:
    out = run(["simulate", "-a", "kb", "--stream", "--allow-restart"])
    assert out.exit_code == 2
    assert "--allow-restart needs --stream and --json" in out.stderr


def test_simulate_works_with_real_keys_set_and_never_shows_them(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = run(["simulate", "-f", "primary=429x1", "--json", "-a", "kb"])
    assert out.exit_code == 0
    assert SECRET not in out.stdout + out.stderr


def test_simulate_uses_a_default_question(home: Path) -> None:
    out = run(["simulate", "-a", "kb"])
    assert out.exit_code == 0
    # The simulated deployment answers the default question from the password article.
    assert "[primary] From “Reset your password”" in out.stdout


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("primary=bogus", "unknown fault 'bogus'"),
        ("primray=429", "did you mean 'primary'?"),
        ("local=429", "local deployment"),
        ("primary", "missing '='"),
    ],
)
def test_simulate_bad_fault_is_a_usage_error(home: Path, fault: str, message: str) -> None:
    out = run(["simulate", "-f", fault])
    assert out.exit_code == 2
    assert message in out.stderr
    assert out.stdout == ""


def test_simulate_with_state_shares_its_cooldowns(home: Path) -> None:
    state = home / "sim-state.json"
    run(["simulate", "-f", "primary=quota", "--state", str(state), "-a", "kb"])
    listed = run(["cooldowns", "--state", str(state), "--json"])
    assert [c["deployment"] for c in json.loads(listed.stdout)] == ["primary"]
    # Three 429s wait about 3 s of virtual time: the file still gets the real time.
    state.unlink()
    run(["simulate", "-f", "primary=429x3", "--state", str(state), "-a", "kb"])
    (cooldown,) = FileStore(state).entries()
    assert cooldown.started <= time.time(), "real time: it did not start in the future"
    # Without --state, simulate's cooldowns stay in memory and touch no file.
    run(["simulate", "-f", "primary=quota", "-a", "kb"])
    assert not (home / "state.json").exists()


# --- cooldowns -----------------------------------------------------------------------------


def _cool(path: Path, name: str, *, seconds: float, kind: ErrorKind) -> None:
    now = time.time()
    FileStore(path).cool(name, until=now + seconds, kind=kind, now=now)


def test_cooldowns_lists_time_left_class_and_start(home: Path) -> None:
    state = home / "state.json"
    assert "no deployment is cooling down" in run(["cooldowns"]).stdout
    _cool(state, "primary", seconds=90, kind=ErrorKind.RATE_LIMIT)
    out = run(["cooldowns"])
    assert out.exit_code == 0
    assert "primary" in out.stdout and "rate_limit" in out.stdout
    assert "1m29s" in out.stdout or "1m30s" in out.stdout
    assert time.strftime("%Y-%m-%d") in out.stdout  # started, in local time
    obj = json.loads(run(["cooldowns", "--json"]).stdout)
    assert obj[0]["deployment"] == "primary"
    assert 85 < obj[0]["seconds_left"] <= 90


def test_cooldowns_reset_one_or_all(home: Path) -> None:
    state = home / "state.json"
    _cool(state, "primary", seconds=60, kind=ErrorKind.RATE_LIMIT)
    _cool(state, "fallback", seconds=60, kind=ErrorKind.OVERLOADED)
    assert run(["cooldowns", "reset", "primary"]).exit_code == 0
    assert [c.deployment for c in FileStore(state).entries()] == ["fallback"]
    assert run(["cooldowns", "reset"]).exit_code == 0
    assert FileStore(state).entries() == []


def test_cooldowns_lists_a_key_as_its_deployments_and_reset_clears_a_pair_or_all_of_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    state = home / "state.json"
    now = time.time()
    store = FileStore(state)
    for name, deployment in [
        ("key:primary/OPENAI_API_KEY", "primary"),
        ("key:fallback/ANTHROPIC_API_KEY", "fallback"),
        ("primary", "primary"),
        # The previous release's key-wide record: honoured by nothing, shown nowhere.
        ("key:OPENAI_API_KEY", "primary"),
    ]:
        store.cool(name, until=now + 60, kind=ErrorKind.AUTH, now=now, deployment=deployment)
    listed = json.loads(run(["cooldowns", "--json"]).stdout)
    assert sorted((c["deployment"], c["key"] or "") for c in listed) == [
        ("fallback", "ANTHROPIC_API_KEY"),
        ("primary", ""),
        ("primary", "OPENAI_API_KEY"),
    ]
    out = run(["cooldowns"])
    assert "primary / OPENAI_API_KEY" in out.stdout and out.stderr == ""
    assert run(["cooldowns", "reset", "fallback/ANTHROPIC_API_KEY"]).exit_code == 0
    assert "key:fallback/ANTHROPIC_API_KEY" not in {c.name for c in FileStore(state).entries()}
    # A deployment's name clears its own record and its keys'.
    assert run(["cooldowns", "reset", "primary"]).exit_code == 0
    assert FileStore(state).entries() == []


@pytest.mark.parametrize("name", ["primary", None])
def test_cooldowns_reset_that_cannot_write_says_so_and_exits_74(
    home: Path, name: str | None
) -> None:
    state = home / "state.json"
    _cool(state, "primary", seconds=60, kind=ErrorKind.RATE_LIMIT)
    # A directory where the lock file goes: the state cannot be rewritten, even by root.
    (home / "state.json.lock").unlink()
    (home / "state.json.lock").mkdir()
    out = run(["cooldowns", "reset", *([name] if name else [])])
    assert out.exit_code == 74
    assert f"could not write the state file {state}" in out.stderr
    assert "still cooling down: primary" in out.stderr
    assert "cleared" not in out.stderr
    assert [c.deployment for c in FileStore(state).entries()] == ["primary"]


def test_cooldowns_says_why_how_it_ends_and_the_trips(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    state = home / "state.json"
    now = time.time()
    store = FileStore(state)
    store.cool("primary", until=now + 30, kind=ErrorKind.SERVER, now=now - 40, status=503)
    # The cooldown ended, the probe failed: the next one is twice as long, a second trip.
    store.cool("primary", until=now + 70, kind=ErrorKind.SERVER, now=now + 31, status=503)
    store.cool("fallback", until=now + 7 * 86400, kind=ErrorKind.RATE_LIMIT, now=now, status=429)
    out = run(["cooldowns"])
    assert out.exit_code == 0, out.stderr
    assert "server 503" in out.stdout and "doubled" in out.stdout
    assert "rate_limit 429" in out.stdout and "max_cooldown" in out.stdout
    by_name = {c["deployment"]: c for c in json.loads(run(["cooldowns", "--json"]).stdout)}
    assert by_name["primary"]["trips"] == 2 and by_name["primary"]["ends"] == "escalated"
    assert by_name["fallback"]["ends"] == "capped"
    assert by_name["fallback"]["seconds_left"] <= 3600, "a 7-day wait is capped at an hour"


def test_cooldowns_off_a_terminal_keeps_each_row_whole_at_80_columns(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    now = time.time()
    FileStore(home / "state.json").cool(
        "primary", until=now + 7 * 86400, kind=ErrorKind.RATE_LIMIT, now=now, status=429
    )
    out = run(["cooldowns"])
    assert out.exit_code == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "primary" in line)
    # Before, the cells folded into 80 columns: "max_coold" / "own (a longer wait ...".
    assert "rate_limit 429" in row
    assert "at policy.max_cooldown (a longer wait was asked for); then one probe" in row


def test_cooldowns_lists_a_bad_state_file_without_crashing_or_moving_it(home: Path) -> None:
    state = home / "state.json"
    good = {"until": time.time() + 60, "kind": "server", "started": time.time()}
    data = json.dumps(
        {"version": 1, "salt": "00", "cooldowns": {"primary": good, "x": {**good, "until": NAN}}}
    ).encode()
    state.write_bytes(data)
    out = run(["cooldowns", "--json"])
    assert out.exit_code == 0
    assert [c["deployment"] for c in json.loads(out.stdout)] == ["primary"]
    assert "'x' was dropped" in out.stderr
    assert state.read_bytes() == data, "the listing only reads"
    state.write_bytes(b"{garbage")
    out = run(["cooldowns"])
    assert out.exit_code == 0 and "corrupt" in out.stderr
    assert state.read_bytes() == b"{garbage" and not state.with_name("state.json.corrupt").exists()


def test_cooldowns_reset_unknown_name_is_a_usage_error(home: Path) -> None:
    out = run(["cooldowns", "reset", "primay"])
    assert out.exit_code == 2
    assert "did you mean 'primary'?" in out.stderr


def test_cooldowns_path_follows_flag_and_environment(home: Path) -> None:
    assert run(["cooldowns", "path"]).stdout == f"{home / 'state.json'}\n"
    other = home / "other.json"
    assert run(["cooldowns", "path", "--state", str(other)]).stdout == f"{other}\n"
    assert run(["cooldowns", "--state", str(other), "path"]).stdout == f"{other}\n"


# --- config check --------------------------------------------------------------------------


def test_config_check_shows_the_resolved_config(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = run(["config", "check"])
    assert out.exit_code == 0
    text = out.stdout
    assert f"config: {home / 'support-ask.yaml'}" in text
    assert "1. primary: openai gpt-4o-mini, window 128,000 tokens" in text
    assert "OPENAI_API_KEY ✓ set" in text and "ANTHROPIC_API_KEY ✗ not set" in text
    assert "policy: retries=1" in text  # fallback's override
    assert "retries=2, backoff_base=1" in text  # the top-level policy
    assert "long_context: none" in text
    assert f"state: {home / 'state.json'}" in text
    assert SECRET not in text + out.stderr


def test_config_check_problem_exits_78_with_file_line_and_key(home: Path) -> None:
    bad = CONFIG.replace("    context_window: 200000\n", "    context_window: -5\n")
    (home / "support-ask.yaml").write_text(bad)
    out = run(["config", "check"])
    assert out.exit_code == 78
    assert "support-ask.yaml:" in out.stderr and "context_window" in out.stderr


def test_config_check_on_the_bundled_default(home: Path) -> None:
    (home / "support-ask.yaml").unlink()
    out = run(["config", "check"])
    assert out.exit_code == 0
    assert "config: <bundled default>" in out.stdout
    assert "no config file found; searched" in out.stdout
    assert "long_context: long: gemini" in out.stdout


def test_config_check_json_shows_the_resolved_config_and_no_key(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = run(["config", "check", "--json"])
    assert out.exit_code == 0
    obj = json.loads(out.stdout)
    assert obj["valid"] is True and obj["problems"] == []
    assert obj["config"] == str(home / "support-ask.yaml")
    first, second, third = obj["deployments"]
    assert (first["name"], first["api_key_env"], first["key_set"]) == (
        "primary",
        "OPENAI_API_KEY",
        True,
    )
    assert (second["key_set"], second["callable"], second["policy"]["retries"]) == (
        False,
        False,
        1,
    )
    assert third["provider"] == "local" and third["callable"] is True
    assert obj["policy"]["budget"] == 30 and obj["long_context"] is None
    assert obj["state"] == str(home / "state.json")
    assert SECRET not in out.stdout + out.stderr


def test_config_check_json_lists_every_problem(home: Path) -> None:
    bad = CONFIG.replace("product: Acme Cloud", "prodct: Acme").replace(
        "    context_window: 200000\n", "    context_window: -5\n"
    )
    (home / "support-ask.yaml").write_text(bad)
    out = run(["config", "check", "--json"])
    assert out.exit_code == 78
    obj = json.loads(out.stdout)
    assert obj["valid"] is False
    assert [(p["line"], p["key"]) for p in obj["problems"]] == [
        (1, "prodct"),
        (20, "deployments[1].context_window"),
    ]
    assert out.stderr.count("error: ") == 2  # and each on stderr, with its line


def test_config_init_writes_the_commented_sample_and_never_overwrites(home: Path) -> None:
    sample = (REPO / "sample-config.yaml").read_text()
    target = home / "new" / "support-ask.yaml"
    out = run(["config", "init", str(target)])
    assert out.exit_code == 0, out.stderr
    assert target.read_text() == sample
    assert f"config check --config {target}" in out.stderr
    target.write_text("product: mine\n")
    again = run(["config", "init", str(target)])
    assert again.exit_code == 73
    assert "already exists" in again.stderr and "--force" in again.stderr
    assert target.read_text() == "product: mine\n"
    assert run(["config", "init", str(target), "--force"]).exit_code == 0
    assert target.read_text() == sample
    printed = run(["config", "init", "-"])
    assert printed.stdout == sample


def test_config_init_defaults_to_the_user_config_dir_where_it_is_found(home: Path) -> None:
    from gateway.config import user_config_file

    (home / "support-ask.yaml").unlink()
    assert run(["config", "init"]).exit_code == 0
    assert user_config_file().is_file()
    assert f"config: {user_config_file()}" in run(["config", "check"]).stdout


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["ask"],
        ["simulate"],
        ["cooldowns"],
        ["cooldowns", "reset"],
        ["config", "init"],
        ["config", "check"],
        ["stats"],
        ["eval"],
    ],
)
def test_help_names_values_as_a_user_reads_them(home: Path, command: list[str]) -> None:
    out = run([*command, "--help"])
    assert out.exit_code == 0
    # Not Typer's Python types (`<list[str]>`, `<bool>`) nor a braced `{questions}`.
    assert not re.findall(r"<[\w\[\], ]+>|\{\w+\}", out.stdout), out.stdout


def test_help_lists_every_command(home: Path) -> None:
    out = run(["--help"])
    assert out.exit_code == 0
    for command in ("ask", "simulate", "cooldowns", "config"):
        assert command in out.stdout


def test_config_init_names_the_product_given_and_it_reads_back(home: Path) -> None:
    target = home / "mine.yaml"
    out = run(["config", "init", str(target), "--product", 'Zed: "the" DB'])
    assert out.exit_code == 0, out.stderr
    assert "sample's" not in out.stderr
    assert 'product: "Zed: \\"the\\" DB"' in target.read_text()
    checked = run(["config", "check", "--config", str(target), "--json"])
    assert json.loads(checked.stdout)["product"] == 'Zed: "the" DB'
    plain = home / "plain.yaml"
    out = run(["config", "init", str(plain)])
    assert "its `product:` is the sample's, Acme Cloud" in out.stderr
