"""Where the state lives: a file (a path) or a Redis server (a `redis://` or `rediss://`
URL). A URL's password is a secret like a key: only `shown`, the URL without its user
and password, ever reaches a message."""

from __future__ import annotations

from pathlib import Path

from gateway.record import record
from gateway.secrets.key import Secret

SCHEMES = ("redis://", "rediss://")


class LocationError(ValueError):
    """A state location that cannot be used; the message never holds a password."""


@record
class RedisURL:
    url: Secret  # the whole URL, password and all: only handed to the client
    shown: str  # scheme://host:port/db: what every message says

    @staticmethod
    def parse(text: str) -> RedisURL:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(text)
            port = parts.port or 6379
        except ValueError:
            # urllib's messages can quote the URL: say what is wrong without it.
            raise LocationError(
                "not a valid Redis URL (expected redis://[user:password@]host:port/db)"
            ) from None
        if not parts.hostname:
            raise LocationError("a Redis URL needs a host: redis://host:port/db")
        db = parts.path.strip("/") or "0"
        if not db.isdigit():
            raise LocationError(
                f"the Redis database must be a number, as in {parts.scheme}://host:port/0"
            )
        if parts.query or parts.fragment:
            raise LocationError("a Redis URL takes no ?query or #fragment here")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        shown = f"{parts.scheme}://{host}:{port}/{int(db)}"
        return RedisURL(Secret(text), shown)

    def __str__(self) -> str:
        return self.shown


def parse_location(text: str) -> Path | RedisURL:
    """A path selects the file store, a redis:// or rediss:// URL the Redis store."""
    if text.startswith(SCHEMES):
        return RedisURL.parse(text)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise LocationError(
            f"{scheme}:// is not a state store: give a file path, or a redis:// or rediss:// URL"
        )
    return Path(text).expanduser()
