"""What failed is what cools, across real `support-ask simulate` processes: one
machine's invocations sharing a state file, and two machines sharing a real redis-server on
a free loopback port. A representative part of the table in tests/support/cooling_table.py
(every class is covered in-process by tests/gateway/engine/test_cooling_scope.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_process import support_ask
from tests.support.cooling_table import (
    CASES,
    LAYOUTS,
    Case,
    Layout,
    Scope,
    expected_calls,
    expected_cooled,
    grouped,
)
from tests.support.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.slow  # support-ask processes, a real redis-server

CASE = {c.name: c for c in CASES}
LAYOUT = {layout.name: layout for layout in LAYOUTS}
SHARED = LAYOUT["one_key_two_deployments"]

ACROSS_PROCESSES = [
    *((name, SHARED.name) for name in CASE if CASE[name].spec is not None),
    ("rate_limit", "two_keys_two_deployments"),
    ("server_5xx", "two_keys_two_deployments"),
    ("rate_limit", "two_keys_one_deployment"),
    ("auth", "two_keys_one_deployment"),
]


def home_for(tmp_path: Path, layout: Layout, name: str = "home") -> Path:
    home = tmp_path / name
    (home / "kb").mkdir(parents=True)
    (home / "kb" / "reset.md").write_text("# Reset your password\n\nUse the reset link.\n")
    (home / "support-ask.yaml").write_text(layout.yaml())
    return home


def simulate(home: Path, case: Case, state: str) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    assert case.spec is not None
    done = support_ask(
        home, "simulate", "--fail", f"primary={case.spec}", "--state", state, "--json", "-a", "kb"
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(done.stdout)


def called(result: dict) -> list[tuple[str, str | None, int]]:  # type: ignore[type-arg]
    return grouped(
        [(a["deployment"], a["key"]) for a in result["attempts"] if a["decision"] != "skipped"]
    )


def assert_next_skips_only_primary(result: dict, layout: Layout) -> None:  # type: ignore[type-arg]
    assert [(a["deployment"], a["decision"]) for a in result["attempts"]] == [
        ("primary", "skipped"),
        ("fallback", "answered"),
    ]
    assert result["attempts"][1]["key"] == layout.fallback_key


@pytest.mark.parametrize(("case_name", "layout_name"), ACROSS_PROCESSES)
def test_what_failed_is_what_cools_across_processes(
    tmp_path: Path, case_name: str, layout_name: str
) -> None:
    case, layout = CASE[case_name], LAYOUT[layout_name]
    home = home_for(tmp_path, layout)
    state = home / "shared-state.json"
    done, first = simulate(home, case, str(state))
    assert called(first) == expected_calls(case, layout)
    if case.scope is Scope.NOTHING:
        assert first["status"] == "refused"
        assert not state.exists() or json.loads(state.read_text())["cooldowns"] == {}
        return
    assert (done.returncode, first["deployment"]) == (0, "fallback"), done.stderr
    assert set(json.loads(state.read_text())["cooldowns"]) == expected_cooled(case, layout)

    done, second = simulate(home, case, str(state))
    assert done.returncode == 0, done.stderr
    assert_next_skips_only_primary(second, layout)


def test_the_429x3_acceptance_with_two_deployments_on_one_key(tmp_path: Path) -> None:
    home = home_for(tmp_path, SHARED)
    state = home / "state.json"
    done = support_ask(
        home, "simulate", "--fail", "primary=429x3", "--state", str(state), "-a", "kb"
    )
    assert done.returncode == 0, done.stderr
    assert "calls received: primary 3, fallback 1" in done.stderr
    assert done.stdout.strip()
    listed = json.loads(support_ask(home, "cooldowns", "--state", str(state), "--json").stdout)
    assert [(c["deployment"], c["key"]) for c in listed] == [("primary", "OPENAI_API_KEY")]
    table = support_ask(home, "cooldowns", "--state", str(state)).stdout
    assert "primary / OPENAI_API_KEY" in table
    reset = support_ask(home, "cooldowns", "--state", str(state), "reset", "primary")
    assert reset.returncode == 0, reset.stderr
    assert json.loads(support_ask(home, "cooldowns", "--state", str(state), "--json").stdout) == []


# -- two machines, one Redis --------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


@pytest.mark.parametrize("case_name", ["rate_limit", "auth", "quota", "server_5xx"])
def test_what_failed_is_what_cools_through_redis(
    tmp_path: Path, server: RedisServer, case_name: str
) -> None:
    case = CASE[case_name]
    a, b = (home_for(tmp_path, SHARED, name) for name in "ab")
    done, first = simulate(a, case, server.url)
    assert (done.returncode, first["deployment"]) == (0, "fallback"), done.stderr
    assert called(first) == expected_calls(case, SHARED)
    assert "Redis" not in done.stderr, "no warning: Redis answered"

    done, second = simulate(b, case, server.url)
    assert done.returncode == 0, done.stderr
    assert_next_skips_only_primary(second, SHARED)
    keys = sorted(k.decode() for k in server.client().keys("support-ask:cool:*"))  # type: ignore[attr-defined]
    assert keys == sorted(f"support-ask:cool:{name}" for name in expected_cooled(case, SHARED))
    for home in (a, b):
        assert not (home / "xdg" / "support-ask" / "cooldowns.json").exists(), "all in Redis"
