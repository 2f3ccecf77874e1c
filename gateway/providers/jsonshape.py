"""JSON to and from providers: bodies are read defensively, a wrong shape never crashes.

The `as_*` accessors give an empty or missing value for a field of the wrong type, so an
adapter reads a surprising body as "no answer" rather than raising a TypeError; a body
that is not JSON at all is the server's fault (`decode_json` raises `malformed`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring

from gateway.providers.failures import malformed


def as_dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    # bool is an int to Python, never a token count to a provider
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def carries_error(data: object) -> bool:
    """A JSON body that is an error envelope: {"error": ...}, or Gemini's [{"error": ...}]."""
    if isinstance(data, list):
        data = data[0] if data else None
    return isinstance(data, dict) and bool(data.get("error"))


# Built once: `json.dumps` with any option builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# The control characters but tab, newline and return: rare in any text, and escaped by the
# C escaper's own rules (`\b`, `\f`, `\u00XX`) whenever a text holds one.
_RARE = (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20))
# Below this many characters the C escaper costs less than looking for each of _RARE.
_SHORT = 512


def encode(body: Mapping[str, object]) -> bytes:
    return _ENCODER.encode(body).encode()


def string(text: str) -> bytes:
    """`text` as a JSON string, the bytes `encode` writes for it in a body.

    The C escaper reads a prompt character by character (about 32 instructions each, most
    of a new question's body: bench/RESULTS.md); a long text holding only the common
    escapes is written with `bytes.replace`, which finds them with `memchr`. UTF-8 bytes of
    any other character are all above 0x7F, so the bytes are the same either way.
    """
    if len(text) < _SHORT:
        return encode_basestring(text).encode()
    raw = text.encode()
    for c in _RARE:
        if c in raw:
            return encode_basestring(text).encode()
    escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    escaped = escaped.replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    return b'"' + escaped + b'"'


def decode_json(data: str | bytes, *, what: str) -> object:
    try:
        return json.loads(data)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        raise malformed(f"{what} is not valid JSON: {_excerpt(data)}") from None


def _excerpt(data: str | bytes, limit: int = 80) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
