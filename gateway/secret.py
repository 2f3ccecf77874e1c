"""An API key that cannot leak by accident: its repr, str and format never show it."""

from __future__ import annotations

import hashlib


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself: call only where it goes into a request header."""
        return self._value

    def fingerprint(self, salt: bytes) -> str:
        """A short salted digest: tells whether a key changed without storing the key."""
        return hashlib.sha256(salt + self._value.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a Secret is not pickled: it would write the key out")
