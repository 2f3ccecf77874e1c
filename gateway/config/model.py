"""The configuration's records: what to try, in which order, how hard; and its one error.

Every engine run imports this, so it imports nothing beyond the gateway's vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gateway.model import ProviderKind

# The `source` of the config used when no file is found.
BUNDLED_SOURCE = "<bundled default>"


@dataclass(frozen=True)
class Policy:
    """How hard to try. Top-level defaults; any field can be overridden per deployment."""

    retries: int = 2  # retries per deployment after the first call
    backoff_base: float = 1.0  # seconds; doubles each retry
    backoff_max: float = 8.0
    cooldown: float = 60.0  # seconds a failed deployment is skipped
    budget: float = 30.0  # seconds across ALL attempts of one question
    timeout: float = 20.0  # seconds for one attempt, capped by what is left of the budget


@dataclass(frozen=True)
class Deployment:
    """One model behind one provider, with its window and its own policy."""

    name: str
    provider: ProviderKind
    context_window: int
    policy: Policy = field(default_factory=Policy)
    model: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    api_version: str | None = None  # azure only
    headers: tuple[tuple[str, str], ...] = ()  # extra request headers (openai-compatible)


@dataclass(frozen=True)
class LogSettings:
    """The attempt log (JSON Lines)."""

    enabled: bool = True
    path: Path | None = None  # None = platformdirs user log dir / attempts.jsonl
    include_text: bool = False  # question and answer text are customer data: off by default
    max_bytes: int = 5_000_000


@dataclass(frozen=True)
class Config:
    """The whole configuration: what to try, in which order, how hard."""

    product: str
    deployments: tuple[Deployment, ...]
    long_context: Deployment | None = None
    policy: Policy = field(default_factory=Policy)
    max_output_tokens: int = 400
    prompt: Path | None = None  # None = the bundled portable prompt
    state_path: Path | None = None  # None = platformdirs user state dir / cooldowns.json
    source: str = BUNDLED_SOURCE  # where this config came from, for messages
    log: LogSettings = field(default_factory=LogSettings)
    max_fallback_rate: float | None = None

    def all_deployments(self) -> tuple[Deployment, ...]:
        extra = () if self.long_context is None else (self.long_context,)
        return self.deployments + extra


class ConfigError(Exception):
    """A configuration problem; the message names the file, line and key, and the fix."""

    def __init__(self, message: str, *, file: str, line: int | None = None, key: str | None = None):
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
