"""Every secret this run knows, cut out of everything it writes.

One `Redactor` is built per run (`redactor_for`) from the values it could leak: the
configured key variables' values, the configured headers' secret values (a gateway's own
token), and the passwords of proxy URLs in the environment. It is applied where text
comes in from a provider (`gateway.providers.redaction.RedactingProvider`: the answer,
each streamed delta, error details), so the answer on stdout, the JSON, the attempts
table, the attempt log and the state file never hold a key even when a proxy echoes one
back; and the CLI applies the same one where text leaves the process (stdout, stderr, the
`-v` log).

Matching is by exact value, not by shape: `shapes.redact_text` hides anything shaped like
a key in error details and logs; this catches a key of any shape, in any text. Which
headers and URLs hold a secret, and what it is replaced by, is `shapes`'s to say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from gateway.model import TextSink
from gateway.secrets.shapes import MIN_SECRET, PLACEHOLDER, secret_header_values, url_passwords

if TYPE_CHECKING:
    from gateway.config import Config

# Where httpx (and curl, and pip) read a proxy, whose URL may carry a password.
_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


class Redactor:
    """Replaces each known secret value with the placeholder."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        unique = {s for s in secrets if len(s) >= MIN_SECRET}
        self._secrets = tuple(sorted(unique, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"  # never the values

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, PLACEHOLDER)
        return text

    def safe_end(self, text: str) -> int:
        """How much of `text` can be written now: everything before the earliest place
        where a secret may begin that `text` does not finish.

        A stream's next delta could complete such a tail into a secret, so it is held back
        until it does or cannot. A normal answer's tail is rarely the start of a key, so
        nearly every delta goes out whole and at once.
        """
        end = len(text)
        for secret in self._secrets:
            head = secret[0]
            at = text.find(head, max(0, len(text) - len(secret) + 1))
            while at != -1 and at < end:
                if secret.startswith(text[at:]):
                    end = at
                    break
                at = text.find(head, at + 1)
        return end


class StreamScrubber:
    """An `on_text` that passes each delta on scrubbed, holding back a tail that could be
    the start of a secret (a key can straddle two deltas); `flush` releases the rest."""

    __slots__ = ("_held", "_redactor", "_sink")

    def __init__(self, redactor: Redactor, sink: TextSink) -> None:
        self._redactor = redactor
        self._sink = sink
        self._held = ""

    def __call__(self, delta: str) -> None:
        text = self._redactor.scrub(self._held + delta)
        end = self._redactor.safe_end(text)
        self._held = text[end:]
        if end:
            self._sink(text[:end])

    def flush(self) -> None:
        held, self._held = self._held, ""
        if held:
            self._sink(held)  # no secret starts here: `scrub` saw every byte that followed


def redactor_for(config: Config, environ: Mapping[str, str]) -> Redactor:
    """The run's one redactor: every value of the config's key variables (usable or not:
    a value refused as a key is still a secret), secret header values, proxy passwords."""
    found: list[str] = []
    for d in config.all_deployments():
        for variable in d.key_variables:  # each of a deployment's several keys
            value = environ.get(variable, "").strip()
            found += [value, *value.splitlines()]
        found += secret_header_values(dict(d.headers))
    for name in _PROXY_VARIABLES:
        for variable in (name, name.lower()):
            found += url_passwords(environ.get(variable, ""))
    return Redactor(v.strip() for v in found)
