"""API keys: read from the environment and checked (`read_key`), then held so they cannot
leak by accident (`Secret`: its repr, str and format never show it)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.secrets.shapes import PLACEHOLDER


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself: call only where it goes into a request header."""
        return self._value

    def fingerprint(self, salt: bytes) -> str:
        """A short salted digest: tells whether a key changed without storing the key."""
        import hashlib  # OpenSSL's, ~12 M instructions: only a cooldown's key is digested

        return hashlib.sha256(salt + self._value.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"Secret({PLACEHOLDER!r})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a Secret is not pickled: it would write the key out")


class KeyValueError(ValueError):
    """A key variable holds something that cannot be a key. The message names the variable
    and what is wrong, never any character of the value: it is printed."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"the environment variable {variable} {problem}")
        self.variable = variable
        self.problem = problem


def key_problem(value: str) -> str | None:
    """What makes `value` (its surrounding whitespace already stripped) unusable as an API
    key, in words that quote none of it; None when it can be sent.

    A key goes into an HTTP header, which carries visible ASCII only: a value that spans
    lines, holds a control character or a non-ASCII one was pasted wrong (a file read with
    its newlines, a terminal escape, a typographic quote), and sending it would make the
    HTTP library quote the whole value in its error. A function over one value, so a list
    of keys is checked one by one.
    """
    if value.isascii() and value.isprintable() and " " not in value:
        return None  # the common case, decided by C-level scans alone
    if "\n" in value or "\r" in value:
        return "spans more than one line"
    if any(not ch.isprintable() for ch in value if ch.isascii()):
        return "holds a control character"
    if not value.isascii():
        return "holds a non-ASCII character"
    if value[:7].lower() == "bearer ":
        return "starts with 'Bearer ' (a header's value): give the key alone"
    return "holds a space"


def read_key(environ: Mapping[str, str], variable: str) -> Secret | None:
    """The key in `variable`, or None when it is unset or blank.

    Raises KeyValueError when the value cannot be a key: such a deployment is never called.
    """
    value = environ.get(variable, "").strip()
    if not value:
        return None
    problem = key_problem(value)
    if problem is not None:
        raise KeyValueError(variable, problem)
    return Secret(value)
