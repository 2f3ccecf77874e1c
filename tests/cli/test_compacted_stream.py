"""A stream from a deployment whose window holds fewer passages than the prompt: the
engine compacts the request, and the markers it streams are checked against the
passages that request was sent, not the first one. Through the real CLI against an
OpenAI-format provider on 127.0.0.1, over a generated help centre far larger than any
window."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import run
from tests.support.helpcentre import write_centre
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.wire_replies import reply

MARKER = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


class Provider:
    """Replies citing the first passage it was sent and the one just past the last: a
    passage of the full prompt that the compacted request left out."""

    def __init__(self) -> None:
        self.sent: list[int] = []  # passages in each request's system prompt
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        system = ex.json()["messages"][0]["content"]
        count = max(int(n) for n in MARKER.findall(system))
        self.sent.append(count)
        reply(ex, ["Open Settings, then ", "Reset password [", "1]. More in [", f"{count + 1}]."])


@pytest.fixture
def provider() -> Iterator[Provider]:
    found = Provider()
    with found.server:
        yield found


def setup(root: Path, monkeypatch: pytest.MonkeyPatch, base: str, window: int) -> None:
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai")
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(root / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(root / "attempts.jsonl"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    (root / "support-ask.yaml").write_text(
        "product: Acme Cloud\npolicy: {retries: 0, budget: 20, timeout: 10}\n"
        "deployments:\n"
        "  - {name: mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,\n"
        f'     base_url: "{base}/v1", context_window: {window}}}\n'
    )
    write_centre(root / "kb", 60)  # every page's title holds "guide"
    (root / "kb" / "reset.md").write_text(
        "# Reset your password guide\n\nOpen Settings, then Security, then Reset password.\n"
    )


def ask(*flags: str) -> Any:
    return run(["ask", "How do I reset my password with the guide?", "-a", "kb", *flags])


@pytest.mark.parametrize("window", [128_000, 3_000], ids=["whole", "compacted"])
def test_a_streamed_marker_is_checked_against_the_request_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider, window: int
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, window)
    out = ask("--stream", "-q")
    assert out.exit_code == 0, out.output
    (sent,) = provider.sent
    answer, sources = out.stdout.split("\n\n", 1)
    # The marker past the request's passages is dropped as it streams; the list names
    # only the passage that request held under [1].
    assert answer == "Open Settings, then Reset password [1]. More in."
    assert f"[{sent + 1}]" not in out.stdout
    assert sources == "Sources:\n[1] Reset your password guide: kb/reset.md\n"


def test_the_compacted_request_holds_fewer_passages_and_the_json_counts_the_drop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider
) -> None:
    setup(tmp_path, monkeypatch, provider.server.url, 128_000)
    assert ask("--stream", "-q").exit_code == 0
    setup_small = tmp_path / "small"
    setup_small.mkdir()
    setup(setup_small, monkeypatch, provider.server.url, 3_000)
    out = ask("--stream", "--json")
    assert out.exit_code == 0, out.output
    whole, compacted = provider.sent
    assert compacted < whole  # the window held fewer: the marker cited was in the first
    result = json.loads(out.stdout.splitlines()[-1])
    assert [c["n"] for c in result["citations"]] == [1]
    assert result["citations_dropped"] == 1
    assert result["answer"] == "Open Settings, then Reset password [1]. More in."
