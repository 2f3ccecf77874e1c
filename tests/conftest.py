"""Every test runs as a user with no keys and an empty home: nothing it does can read or
write the real user's config, state, cache or log, or reach a provider with a real key."""

from __future__ import annotations

from pathlib import Path

import pytest

_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY")
_OURS = ("SUPPORT_ASK_CONFIG", "SUPPORT_ASK_STATE", "SUPPORT_ASK_LOG")


@pytest.fixture(autouse=True)
def _isolated_user(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home: Path = tmp_path_factory.mktemp("user")
    for var, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    for var in (*_KEYS, *_OURS):
        monkeypatch.delenv(var, raising=False)
