"""The configuration's records: what to try, in which order, how hard; and its one error.

Every engine run imports this, so it imports nothing beyond the gateway's vocabulary.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.model import ProviderKind
from gateway.record import field, record

if TYPE_CHECKING:
    from gateway.config.location import RedisURL

if TYPE_CHECKING:
    from collections.abc import Sequence

# The `source` of the config used when no file is found.
BUNDLED_SOURCE = "<bundled default>"


# The window of a deployment that has none (the offline `local`: the engine never compacts
# or skips it for size): above any input the caps on a help centre let through.
OFFLINE_WINDOW = 1_000_000_000

# More retries than this never fit a budget of seconds with a doubling backoff, and a count
# in the thousands would only ever be a typo.
MAX_RETRIES = 10


@record
class Policy:
    """How hard to try. Top-level defaults; any field can be overridden per deployment."""

    retries: int = 2  # retries per deployment after the first call
    backoff_base: float = 1.0  # seconds; doubles each retry
    backoff_max: float = 8.0
    cooldown: float = 60.0  # seconds a failed deployment is skipped
    budget: float = 30.0  # seconds across ALL attempts of one question
    timeout: float = 20.0  # seconds for one attempt, capped by what is left of the budget
    quota_cooldown: float = 3600.0  # seconds for billing/quota failures with no reset named
    max_cooldown: float = 3600.0  # no cooldown lasts longer, whatever a server asks for
    # Seconds to the first text of a stream (the response of a whole reply) before the
    # attempt is abandoned for the next deployment; never applied to the last one left.
    first_token_timeout: float = 10.0
    stall_timeout: float = 5.0  # the longest silence between two chunks of a flowing reply
    # Retries in place, as a share of the fleet's recent first calls to a deployment
    # (shared through the state store like the limits); past it a retryable failure fails
    # over at once, so a partial outage does not multiply the load on the provider.
    retry_budget: float = 0.1


@record
class Limits:
    """A shared allowance (`limits:` of a deployment or a key): requests and tokens a
    minute, and calls at once (None: no limit of that kind), drawn from by every process
    that uses it through the state store. `fleet_size`: how many processes share it, so
    one that cannot reach the shared store keeps to its share alone: each of its limits, and
    those its provider stated, divided by it."""

    rpm: int | None = None
    tpm: int | None = None
    concurrent: int | None = None
    fleet_size: int = 1


class KeyStrategy(StrEnum):
    """In which order a deployment with several keys tries them."""

    IN_ORDER = "in_order"  # the first key that is not cooling down, always
    ROUND_ROBIN = "round_robin"  # each question starts at the next key (a cursor in the state)


@record
class Price:
    """What a deployment's tokens cost, in US dollars per million; through its provider's
    Batch API (`batch --provider-batch`) `batch_discount` less (a share, 0..1: each of the
    four providers takes half off)."""

    input_per_mtok: float
    output_per_mtok: float
    batch_discount: float = 0.5

    def cost_usd(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The price of one call's usage; None unless the provider reported both counts
        (half a bill would read as the whole one)."""
        if input_tokens is None or output_tokens is None:
            return None
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def batch_cost_usd(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """`cost_usd` at the batch price."""
        cost = self.cost_usd(input_tokens, output_tokens)
        return None if cost is None else cost * (1 - self.batch_discount)


@record
class Deployment:
    """One model behind one provider, with its window and its own policy."""

    name: str
    provider: ProviderKind
    context_window: int
    policy: Policy = field(default_factory=Policy)
    model: str | None = None
    api_key_env: str | None = None  # the (first) key's variable
    # Every key variable, in the order they are tried, when the config gave a list; () when
    # it named one (then `api_key_env` is the only one): see `key_variables`.
    api_key_envs: tuple[str, ...] = ()
    key_strategy: KeyStrategy = KeyStrategy.IN_ORDER
    base_url: str | None = None
    api_version: str | None = None  # azure only
    headers: tuple[tuple[str, str], ...] = ()  # extra request headers (openai-compatible)
    price: Price | None = None  # None: what its calls cost is not known
    limits: Limits | None = None  # the deployment's own allowance, whichever key it uses

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The deployment's key variables, in the order they are tried (none offline)."""
        if self.provider.offline or not self.api_key_env:
            return ()
        return self.api_key_envs or (self.api_key_env,)


@record
class StateSettings:
    """Where the shared state lives besides `Config.state_path`: a Redis server, if any.

    `url` (a `gateway.config.location.RedisURL`, whose password is a secret) selects the
    Redis store; `prefix` starts every key, so teams can share a server; the timeouts
    (seconds) bound what a Redis that is down or slow can cost a question.
    """

    url: RedisURL | None = None
    prefix: str = "support-ask"
    connect_timeout: float = 0.25
    timeout: float = 0.25


@record
class LogSettings:
    """The attempt log (JSON Lines)."""

    enabled: bool = True
    path: Path | None = None  # None = platformdirs user log dir / attempts.jsonl
    include_text: bool = False  # question and answer text are customer data: off by default
    max_bytes: int = 5_000_000


class RefreshRule(StrEnum):
    """When a kept index is brought up to the files (`articles.refresh`)."""

    # Every question checks each file's size and times and reads again the ones changed:
    # an edit is answered from at once, at a stat per file (`gateway.knowledge.store`).
    EVERY_QUESTION = "every_question"
    # Only `support-ask index` (or a question that finds no index to trust) checks the
    # files: a question reads the index as it was last made whole, however the files have
    # changed since. For a help centre published by a deploy step that runs the index.
    ON_INDEX = "on_index"


@record
class ArticleSettings:
    """Where the help centre is, what of it is not articles, how much of it goes into each
    prompt, and the caps on reading it."""

    # The help centre when --articles is not given: absolute (a relative path in the file
    # is joined to the config file's folder, so the config works from any directory).
    paths: tuple[Path, ...] = ()
    # Patterns of files under those folders that are not articles (`gateway.config.globs`).
    exclude: tuple[str, ...] = ()
    max_tokens: int | None = 6000  # passages per question, estimated tokens; None = all
    max_article_bytes: int = 5_000_000  # a bigger file is skipped, with a warning
    max_set_bytes: int = 1_000_000_000  # a bigger set is refused (exit 66)
    max_set_files: int = 100_000  # likewise
    # The relevance a question needs to be answered, 0..1 (`gateway.knowledge.relevance`);
    # below it the question is handed off unasked. Measured by `bench/run quality`.
    min_relevance: float = 0.35
    # Where the published help centre lives: an article's public URL is this joined with
    # its path under its folder, unless the article states its own (`Article.url`).
    url_base: str | None = None
    refresh: RefreshRule = RefreshRule.EVERY_QUESTION


class CitationStyle(StrEnum):
    """How the answer shows its sources to the customer (`answers.citations`)."""

    MARKERS = "markers"  # the [n] markers kept in the text, a "Sources" list after it
    NONE = "none"  # neither: the channel shows `citations` from the JSON itself


@record
class Translations:
    """One sentence in several languages, as the config gives it (`{en: ..., de: ...}`):
    (ISO 639-1 code, text) in the order written."""

    texts: tuple[tuple[str, str], ...]

    def get(self, code: str) -> str | None:
        return next((text for lang, text in self.texts if lang == code), None)


@record
class AnswerSettings:
    """What an answer must hold to be posted, what a handoff says, and in which languages
    (`answers.*`)."""

    citations: CitationStyle = CitationStyle.MARKERS
    require_citation: bool = False  # an answer citing nothing is handed off (`uncited`)
    # A string: the same for every language; a map: by language, the default's required.
    # None: the not-covered sentence in the customer's language (`gateway.answers.phrases`).
    handoff_message: str | Translations | None = None
    # The languages the team answers in, ISO 639-1; empty: any the detector knows.
    languages: tuple[str, ...] = ()
    # The language when the customer's cannot be told, or is not one of `languages`: the
    # first of them when they are listed and this is not.
    default_language: str = "en"
    # The config's own wording of the other fixed phrases (`gateway.answers.phrases`):
    # (phrase, its text for every language, or by language).
    phrases: tuple[tuple[str, str | Translations], ...] = ()


@record
class MaskPattern:
    """A team's own kind of personal data (`privacy.patterns`): its placeholder's name and
    a regular expression (Python `re` syntax), checked when the config is read."""

    name: str
    regex: str


@record
class PrivacySettings:
    """What is masked before any provider sees the customer's text (`privacy.*`): the
    built-in kinds (e-mail, phone, card, IBAN) unless `mask` is false, and every pattern."""

    mask: bool = True
    patterns: tuple[MaskPattern, ...] = ()


@record
class Config:
    """The whole configuration: what to try, in which order, how hard."""

    product: str
    deployments: tuple[Deployment, ...]
    long_context: Deployment | None = None
    policy: Policy = field(default_factory=Policy)
    max_output_tokens: int = 400
    prompt: Path | None = None  # None = the bundled portable prompt
    state_path: Path | None = None  # None = platformdirs user state dir / cooldowns.json
    state: StateSettings = field(default_factory=StateSettings)
    source: str = BUNDLED_SOURCE  # where this config came from, for messages
    log: LogSettings = field(default_factory=LogSettings)
    max_fallback_rate: float | None = None
    articles: ArticleSettings = field(default_factory=ArticleSettings)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    answers: AnswerSettings = field(default_factory=AnswerSettings)
    # Each key's allowance (`keys: {VARIABLE: {limits: ...}}`), shared by every deployment
    # that names the variable: a provider counts its limits per key (per organisation).
    key_limits: tuple[tuple[str, Limits], ...] = ()

    def all_deployments(self) -> tuple[Deployment, ...]:
        extra = () if self.long_context is None else (self.long_context,)
        return self.deployments + extra


class ConfigError(Exception):
    """A configuration problem; the message names the file, line and key, and the fix.

    A file with several problems raises one ConfigError holding them all (`problems`, in
    the order of the file), so a user fixes them in one pass; its own file, line, key and
    message are the first problem's.
    """

    def __init__(self, message: str, *, file: str, line: int | None = None, key: str | None = None):
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.problems: tuple[ConfigError, ...] = (self,)
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")

    @classmethod
    def several(cls, problems: Sequence[ConfigError]) -> ConfigError:
        """One error for every problem found in one file (at least one), in the order they
        were found: a cause (a misspelt key) comes before its effects (a required key missing)."""
        ordered = tuple(problems)
        if len(ordered) == 1:
            return ordered[0]
        first = ordered[0]
        error = cls(first.message, file=first.file, line=first.line, key=first.key)
        error.problems = ordered
        error.args = ("\n".join(str(p) for p in ordered),)  # one a line, each file:line: key
        return error

    def as_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "key": self.key, "message": self.message}
