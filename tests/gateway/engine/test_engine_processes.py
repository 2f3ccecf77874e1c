"""The acceptance scenario across two OS processes that share one state file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # processes sharing one state file

ROOT = REPO


def ask_in_new_process(state: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.engine_driver", str(state)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_cooldown_recorded_by_one_process_is_honoured_by_the_next(tmp_path: Path) -> None:
    state = tmp_path / "cooldowns.json"
    first = ask_in_new_process(state)
    assert first["calls"] == {"primary": 3, "fallback": 1}
    assert first["answer"] == "fallback text"

    second = ask_in_new_process(state)
    assert second["calls"] == {"primary": 0, "fallback": 1}
    assert second["answer"] == "fallback text"
    attempts = second["attempts"]
    assert isinstance(attempts, list)
    assert attempts[0]["deployment"] == "primary"
    assert attempts[0]["decision"] == "skipped"
    assert "cooling down" in attempts[0]["detail"]
    assert oct(state.stat().st_mode & 0o777) == "0o600"
