"""The engine and the shared state: what a cooldown records, and how long it lasts."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.model import ErrorKind
from gateway.state.file import FileStore
from tests.fakes import answer, failure
from tests.test_engine import Harness


def test_the_state_keeps_what_classifies_a_failure_never_its_text(tmp_path: Path) -> None:
    path = tmp_path / "cooldowns.json"
    echo = "429 rate_limit_exceeded: too many requests for 'how do I close jane@example.com'"
    h = Harness(
        {
            "primary": [failure(ErrorKind.RATE_LIMIT, detail=echo, code="rate_limit_exceeded")],
            "fallback": [answer("ok")],
        },
        store=FileStore(path),  # type: ignore[arg-type]
    )
    assert h.ask().deployment == "fallback"
    raw = path.read_text()
    assert "jane" not in raw and "close" not in raw
    entry = json.loads(raw)["cooldowns"]["primary"]
    assert (entry["kind"], entry["status"], entry["code"]) == (
        "rate_limit",
        429,
        "rate_limit_exceeded",
    )


def test_a_server_named_wait_of_a_week_is_capped_at_max_cooldown() -> None:
    h = Harness(
        {
            "primary": [failure(ErrorKind.RATE_LIMIT, retry_after=7 * 86400)],
            "fallback": [answer("ok")],
        }
    )
    h.ask()
    (cooldown,) = h.store.entries()
    assert cooldown.until - cooldown.started == 3600, "policy.max_cooldown, not 7 days"
