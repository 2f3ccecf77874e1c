"""The shared limits across real `support-ask` processes: two homes (two machines) sharing a
real redis-server, and two runs on one machine sharing its state file, against provider
servers on 127.0.0.1; and `cooldowns` listing each allowance's use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_process import ANSWER, Providers, support_ask
from tests.gateway.engine.test_fleet_processes import machine, providers, server
from tests.support.cli_runner import write_loopback_workdir
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # real processes, a real redis-server
__all__ = ["providers", "server"]  # the fixtures, shared with the other fleet tests

QUESTION = ("How do I reset my password?", "-a", "kb", "--json")
# One call a minute on the OpenAI key: the second question's place is a minute away.
KEY_LIMIT = "keys:\n  OPENAI_API_KEY: {limits: {rpm: 1}}\n"


def limited(home: Path) -> Path:
    config = home / "support-ask.yaml"
    config.write_text(config.read_text() + KEY_LIMIT)
    return home


def test_two_machines_sharing_a_redis_share_a_keys_limit(
    tmp_path: Path, providers: Providers, server: RedisServer
) -> None:
    a, b = (limited(machine(tmp_path, n, providers, server.url)) for n in "ab")
    first = support_ask(a, *QUESTION)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["deployment"] == "primary"

    second = support_ask(b, *QUESTION)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    assert out["deployment"] == "fallback"  # at once: a minute's wait is past the budget
    primary = out["attempts"][0]
    assert (primary["deployment"], primary["decision"]) == ("primary", "skipped")
    assert "the limit key:OPENAI_API_KEY rpm asks for" in primary["detail"]
    assert providers.calls("/chat/completions") == 1, "the limit was kept by the fleet"
    assert "Redis" not in second.stderr
    assert server.client().exists("support-ask:limit:key:OPENAI_API_KEY")  # type: ignore[attr-defined]


def test_two_runs_on_one_machine_share_the_limit_through_its_state_file(
    tmp_path: Path, providers: Providers
) -> None:
    write_loopback_workdir(tmp_path, providers.server.url, ANSWER, retries=0, budget=6, timeout=3)
    limited(tmp_path)
    first, second = support_ask(tmp_path, *QUESTION), support_ask(tmp_path, *QUESTION)
    assert [json.loads(r.stdout)["deployment"] for r in (first, second)] == [
        "primary",
        "fallback",
    ]
    assert providers.calls("/chat/completions") == 1
    assert (tmp_path / "state.limits.json").exists()  # beside the state file

    listed = support_ask(tmp_path, "cooldowns")
    assert listed.returncode == 0, listed.stderr
    assert "shared limits" in listed.stdout and "key:OPENAI_API_KEY" in listed.stdout
    assert "1 rpm" in listed.stdout
    shown = json.loads(support_ask(tmp_path, "cooldowns", "limits", "--json").stdout)
    assert [(u["allowance"], u["rpm"], u["in_flight"]) for u in shown] == [
        ("key:OPENAI_API_KEY", 1, 0)
    ]
    assert shown[0]["requests_ahead_s"] > 0  # the next place is most of a minute away


# Another application spent the key: nothing left of 20 a minute, whole in 10 s. The
# second machine waits for what is left of it once the first has ended and it has started,
# which took over 3 s on a loaded machine: the test's own wall time, not the rule's; its
# budget (12 s) holds that wait.
SPENT = {
    "x-ratelimit-limit-requests": "20",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "10s",
}


def test_the_providers_headers_pace_two_machines_with_no_limits_set(
    tmp_path: Path, providers: Providers, server: RedisServer
) -> None:
    providers.primary_headers = SPENT
    a, b = (machine(tmp_path, n, providers, server.url, budget=12) for n in "ab")
    first = support_ask(a, *QUESTION)
    assert first.returncode == 0, first.stderr
    second = support_ask(b, *QUESTION)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    assert out["deployment"] == "primary"
    waited = [a for a in out["attempts"] if a["decision"] == "waited"]
    assert len(waited) == 1 and "provider:OPENAI_API_KEY/" in waited[0]["detail"]
    assert waited[0]["wait_s"] > 0  # what is left of 10 s once the process started

    listed = support_ask(b, "cooldowns")
    assert listed.returncode == 0, listed.stderr
    assert "provider:OPENAI_API_KEY/" in listed.stdout and "20 rpm stated" in listed.stdout
    shown = support_ask(b, "cooldowns", "limits", "--json")
    assert shown.returncode == 0, shown.stderr
    (use,) = json.loads(shown.stdout)
    assert use["allowance"].startswith("provider:OPENAI_API_KEY/")
    assert (use["rpm"], use["stated_rpm"]) == (None, 20.0)
