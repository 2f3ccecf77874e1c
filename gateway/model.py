"""The vocabulary the gateway speaks: closed sets as enums, records as frozen values.

Nothing here does I/O or imports anything heavy, so every module (and the CLI's start-up
path) can import it for free.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from gateway.record import field, record


class ErrorKind(StrEnum):
    """What went wrong, as the classifier sees it. The values are the JSON `error_class`."""

    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    SERVER = "server"
    TIMEOUT = "timeout"
    NETWORK = "network"
    QUOTA = "quota"
    AUTH = "auth"
    MODEL_NOT_FOUND = "model_not_found"
    CONTEXT_WINDOW = "context_window"
    BAD_REQUEST = "bad_request"
    REFUSAL = "refusal"
    OUTPUT_LIMIT = "output_limit"  # a 200 whose answer the output limit cut short
    EMPTY = "empty"  # a 200 with no answer text at all (or only whitespace)
    UNKNOWN = "unknown"


class Decision(StrEnum):
    """What the classifier says to do about one failure."""

    RETRY = "retry"  # the same deployment again, after a wait
    FAIL_OVER = "fail_over"  # the next deployment
    FATAL = "fatal"  # stop the whole question: no deployment can fix it


class Outcome(StrEnum):
    """What the engine did after one attempt. The values are the JSON attempt `decision`."""

    ANSWERED = "answered"
    RETRY = "retry"
    FAIL_OVER = "fail_over"
    FATAL = "fatal"
    SKIPPED = "skipped"  # not called: no key, cooling down, window too small, no budget
    STOPPED = "stopped"  # a stream broke after text reached the user: never retried
    INTERRUPTED = "interrupted"  # the run was stopped (Ctrl-C, a signal) during this call
    # Not a call: the wait for the fleet's shared limits (`limits:`) before the next one.
    WAITED = "waited"

    @property
    def called(self) -> bool:
        """Whether a row with this outcome is a call to the deployment."""
        return self not in (Outcome.SKIPPED, Outcome.WAITED)


class Status(StrEnum):
    """The JSON `status` of a whole question."""

    ANSWERED = "answered"
    REFUSED = "refused"
    FAILED = "failed"
    FATAL = "fatal"


class RefusedBy(StrEnum):
    """Who refused: the JSON `refusal.by`."""

    PROVIDER = "provider"  # its filter blocked the prompt or withheld the answer
    MODEL = "model"  # the model declined, in its own words (which go to stdout as they are)


@record
class Refusal:
    by: RefusedBy
    message: str

    def as_json(self) -> dict[str, object]:
        return {"by": str(self.by), "message": self.message}


class Route(StrEnum):
    NORMAL = "normal"
    LONG_CONTEXT = "long_context"


class ProviderKind(StrEnum):
    OPENAI = "openai"
    AZURE = "azure"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    LOCAL = "local"

    @property
    def offline(self) -> bool:
        """Answers in-process, without network or key: milliseconds, never rate-limited."""
        return self is ProviderKind.LOCAL

    @property
    def states_limits(self) -> bool:
        """Its responses carry rate-limit headers (`gateway.providers.headroom`): a cold
        fleet waits for the first one (`gateway.limits.rules`, the slow start)."""
        return self in (ProviderKind.OPENAI, ProviderKind.AZURE, ProviderKind.ANTHROPIC)


class Timer(StrEnum):
    """Which of an attempt's deadlines ran out."""

    ATTEMPT = "attempt"  # policy.timeout, capped by what is left of the budget
    FIRST_TOKEN = "first_token"  # policy.first_token_timeout: no text (or no response) yet
    STALL = "stall"  # policy.stall_timeout: silence between two chunks of a flowing reply


@record
class Window:
    """One of a provider's rate windows as a response's headers stated it: its limit a
    minute (None: not stated), what is left of it, and the seconds until it is whole
    again (None: not stated)."""

    limit: int | None
    remaining: int
    reset_s: float | None = None


@record
class Headroom:
    """What a provider's response said is left of the key's rate limits, as it said it:
    its requests and its tokens window (None: not stated). For a provider with several
    token windows (input and output), the one with the least left. What it means for the
    next call is the engine's to decide."""

    requests: Window | None = None
    tokens: Window | None = None


@record
class Failure:
    """One classified failure: the output of `gateway.classify.errors`.

    `retry_after` is the server-directed wait in seconds (any form: header, body, message),
    or None when the server named none. `detail` is a short human sentence; it never holds
    a secret. `code` is the provider's machine name for the error (its code, type or
    canonical status, e.g. `insufficient_quota`): what classifies it, never free text.
    `timer` names the deadline that ran out (None: not a deadline); `silent` is
    set when not even a response's status line and headers arrived before it failed.
    """

    kind: ErrorKind
    decision: Decision
    detail: str
    status: int | None = None
    retry_after: float | None = None
    code: str | None = None
    timer: Timer | None = None
    silent: bool = False
    headroom: Headroom | None = None  # the response's rate-limit headers, when it had any


class ProviderError(Exception):
    """The only exception a provider adapter raises: a failure already classified.

    Every foreign exception (httpx, json, ...) becomes one of these in one place
    (`gateway.providers.http`), so the engine never sees a library's exception type.
    `partial` is text already handed to `on_text` before a stream broke.
    """

    def __init__(self, failure: Failure, partial: str = "") -> None:
        super().__init__(failure.detail)
        self.failure = failure
        self.partial = partial


class PageKind(StrEnum):
    """What a help-centre page is for (`gateway.knowledge.shape` decides it on loading):
    answering questions, or leading to the pages that do (a book index, a table of
    contents, a site map). A navigation page is never answered from offline and weighs
    less in the prompt's selection."""

    ARTICLE = "article"
    NAVIGATION = "navigation"


@record
class Article:
    """One help-centre article, as read from disk (HTML already reduced to text)."""

    title: str
    path: str
    text: str
    # Its public address as the article states it (Markdown front matter `url:`, an HTML
    # page's canonical link); None when it states none.
    url: str | None = None
    kind: PageKind = PageKind.ARTICLE


@record
class Source:
    """One passage sent to the models (or a whole article, when every article fits).

    `score` is the ranker's (None when every article is sent whole, unranked); `coverage`
    is the share of the question's weight the passage holds, 0..1 (None likewise).
    `article` and `number` place it: its article's place in the set, its place in that
    article (`number` is None for a whole article). `tokens` is an estimate
    (`gateway.tokens.estimate`).
    """

    path: str
    title: str
    heading: str
    text: str
    tokens: int
    article: int
    number: int | None
    score: float | None = None
    coverage: float | None = None
    url: str | None = None  # its article's stated public address (`Article.url`)
    kind: PageKind = PageKind.ARTICLE  # its article's (`Article.kind`)

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "title": self.title,
            "heading": self.heading or None,
            "tokens": self.tokens,
            "score": None if self.score is None else round(self.score, 3),
        }


class Role(StrEnum):
    """Who wrote a turn of a support chat (`--thread`)."""

    CUSTOMER = "customer"
    AGENT = "agent"


@record
class Turn:
    """One message of the chat before the current one, oldest first (already masked)."""

    role: Role
    content: str


@record
class Request:
    """What every deployment is asked: the rendered system prompt and the question.

    `articles` and `product` travel along for the offline `local` deployment, which ranks
    the articles itself and names the product in its "not covered" reply. `sources` are
    the passages the prompt holds; when they were chosen by rank (best first), `ranked` is
    True and the offline deployment answers from the first, without ranking again.
    """

    system: str
    question: str
    max_output_tokens: int
    articles: tuple[Article, ...] = ()
    product: str = ""
    sources: tuple[Source, ...] = ()
    ranked: bool = False
    # The chat before `question`, oldest first; each adapter sends it as its wire
    # format's turns between the system prompt and the question. `turns_left_out`: the
    # thread's turns not sent, the oldest, for the input budget.
    turns: tuple[Turn, ...] = ()
    turns_left_out: int = 0
    turn_tokens: int = 0  # the turns' estimated tokens (`gateway.tokens.estimate`)
    language: str | None = None  # ISO 639-1: the language the prompt asks the reply in
    # The fixed phrases in that language as the config words them, (name, template), for
    # the offline deployment (`gateway.answers.phrases`); empty: English.
    wording: tuple[tuple[str, str], ...] = ()
    # The team's relevance floor (`articles.min_relevance`), for the offline deployment's
    # own handoff; None: the default floor. A floor of 0 turns its handoff off too.
    min_relevance: float | None = None

    @property
    def text(self) -> str:
        """Everything the model reads, as one text for counting its tokens."""
        return "\n".join((self.system, *(t.content for t in self.turns), self.question))


@record
class Reply:
    """A provider's answer. `refused` marks a refusal delivered as a normal response;
    `filtered` says the provider's filter refused, not the model, so `text` is the
    provider's explanation rather than anything the model wrote. `cut_short` is why the
    answer stopped before its end (OUTPUT_LIMIT or CONTEXT_WINDOW), read from
    `finish_reason` (kept as the provider sent it); None for an answer that ended."""

    text: str
    finish_reason: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    refused: bool = False
    filtered: bool = False
    cut_short: ErrorKind | None = None
    headroom: Headroom | None = None  # the response's rate-limit headers, when it had any


@record
class Usage:
    """Tokens one call used, as the provider reported them (None: it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None

    @staticmethod
    def of(reply: Reply) -> Usage:
        return Usage(reply.input_tokens, reply.output_tokens)

    def as_json(self) -> dict[str, object]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@record
class Attempt:
    """One row of the attempts table: what one call (or one skip) did.

    `attempt` counts calls to this deployment from 1 (0 for a skip); `wait_s` is the wait
    the engine took (or would have taken) after this attempt before the next step;
    `elapsed_s` is the time this attempt itself took. `usage` is set when a reply came
    (answered, refused, cut short, empty); `cost_usd` when its deployment has a price and
    the provider reported both counts. `outcome` is what the engine did next; the JSON
    names it `decision`, as it always has (the user's contract, not the classifier's
    `Decision`).
    """

    deployment: str
    attempt: int
    status: int | None
    error_class: ErrorKind | None
    outcome: Outcome
    wait_s: float
    elapsed_s: float
    detail: str = ""
    key: str | None = None  # the key's variable name (never its value); None: no key
    usage: Usage | None = None
    cost_usd: float | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "deployment": self.deployment,
            "key": self.key,
            "attempt": self.attempt,
            "status": self.status,
            "error_class": None if self.error_class is None else str(self.error_class),
            "decision": str(self.outcome),
            "wait_s": round(self.wait_s, 3),
            "elapsed_s": round(self.elapsed_s, 3),
            "detail": self.detail,
            "usage": None if self.usage is None else self.usage.as_json(),
            "cost_usd": _dollars(self.cost_usd),
        }


def _dollars(value: float | None) -> float | None:
    # A millionth of a cent is below any bill; keeps JSON free of float noise.
    return None if value is None else round(value, 8)


@record
class DeploymentError:
    """One deployment's line in a failure report: its last error or why it was skipped."""

    name: str
    last_error: str


class FailureKind(StrEnum):
    """Why a whole question failed; decides the exit code."""

    UNAVAILABLE = "unavailable"  # all cooling down / rate-limited past the budget: retry later (75)
    EXHAUSTED = "exhausted"  # each deployment failed or was skipped (69)
    TOO_LARGE = "too_large"  # no deployment's window holds the input (65)
    BAD_REQUEST = "bad_request"  # malformed request (65)
    INCOMPLETE = "incomplete"  # a stream broke after text was written (69)
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or SIGHUP mid-question (130, 143, 129)


@record
class QuestionError:
    """Why a whole question failed, and each deployment's part in it."""

    kind: FailureKind
    message: str
    deployments: tuple[DeploymentError, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "deployments": [{"name": d.name, "last_error": d.last_error} for d in self.deployments],
        }


class Action(StrEnum):
    """What a script does with an answered question: the JSON `action`."""

    ANSWER = "answer"  # post the answer (exit 0)
    HANDOFF = "handoff"  # give the ticket to a person; stdout holds the handoff message (exit 5)


class HandoffReason(StrEnum):
    """Why a question was handed off: the JSON `handoff.reason`."""

    NOT_COVERED = "not_covered"  # no passage cleared the relevance floor: no model was asked
    MODEL = "model"  # the model's reply began with the handoff marker
    UNCITED = "uncited"  # the answer cites no passage sent, and citations are required


@record
class Handoff:
    reason: HandoffReason
    detail: str

    def as_json(self) -> dict[str, object]:
        return {"reason": str(self.reason), "detail": self.detail}


@record
class Citation:
    """A passage the answer cites: `n` is its marker's number (its place in the prompt,
    from 1); `url` its article's public address, None when none is known."""

    n: int
    path: str
    title: str
    heading: str
    url: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "path": self.path,
            "title": self.title,
            "heading": self.heading or None,
            "url": self.url,
        }


@record
class Result:
    """The outcome of one question: always returned, never raised, so JSON can show it."""

    status: Status
    answer: str | None
    deployment: str | None
    provider: str | None
    model: str | None
    routed: Route
    input_tokens: int
    elapsed_s: float
    attempts: tuple[Attempt, ...]
    error: QuestionError | None = None
    incomplete: bool = False
    finish_reason: str | None = None  # as the provider sent it, for the text in `answer`
    refusal: Refusal | None = None
    usage: Usage = field(default_factory=Usage)  # of the reply whose text is `answer`

    @property
    def cost_usd(self) -> float | None:
        """What the question's calls cost, every priced attempt included (a cut-short reply
        was paid for too); None when none of them has a price."""
        costs = [a.cost_usd for a in self.attempts if a.cost_usd is not None]
        return sum(costs) if costs else None

    # False when the count is the cheap upper bound (UTF-8 bytes) that already fit every
    # window, so the tokenizer was never loaded.
    input_tokens_exact: bool = True
    # The passages (or whole articles) the answering deployment was sent, in the prompt's
    # order; for a failed question, those of the last request built.
    articles: tuple[Source, ...] = ()
    # How many values of each kind of personal data were masked before any call, by kind
    # (`gateway.answers.masking`); the values themselves are never here.
    masked: tuple[tuple[str, int], ...] = ()
    # The chat's turns sent with the question, and those left out for the input budget.
    turns: int = 0
    turns_left_out: int = 0
    turn_tokens: int = 0  # their estimated tokens
    language: str | None = None  # ISO 639-1: the language the reply was asked in
    # What the answer means to a script (`gateway.answers.settle`): None until settled, and
    # for a question nothing answered.
    action: Action | None = None
    handoff: Handoff | None = None
    citations: tuple[Citation, ...] = ()  # in the order first cited
    citations_dropped: int = 0  # markers for passages that were not sent, removed

    @property
    def grounded(self) -> bool | None:
        """Whether the reply cites a passage it was sent; None when nothing answered."""
        return None if self.action is None else bool(self.citations)

    @property
    def served_attempts(self) -> int:
        """Calls made in all (skips excluded): 'after how many attempts'."""
        return sum(1 for a in self.attempts if a.outcome is not Outcome.SKIPPED)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "schema_version": 1,
            "status": str(self.status),
            "answer": self.answer,
            "deployment": self.deployment,
            "provider": self.provider,
            "model": self.model,
            "routed": str(self.routed),
            "input_tokens": self.input_tokens,
            "input_tokens_exact": self.input_tokens_exact,
            "elapsed_s": round(self.elapsed_s, 3),
            "finish_reason": self.finish_reason,
            "refusal": None if self.refusal is None else self.refusal.as_json(),
            "usage": self.usage.as_json(),
            "language": self.language,
            "masked": dict(self.masked),
            "thread": (
                {"turns": self.turns, "left_out": self.turns_left_out}
                if self.turns or self.turns_left_out
                else None
            ),
            "cost_usd": _dollars(self.cost_usd),
            "attempts": [a.as_json() for a in self.attempts],
            "articles": [s.as_json() for s in self.articles],
            "action": None if self.action is None else str(self.action),
            "handoff": None if self.handoff is None else self.handoff.as_json(),
            "citations": [c.as_json() for c in self.citations],
            "citations_dropped": self.citations_dropped,
            "grounded": self.grounded,
        }
        if self.error is not None:
            out["error"] = self.error.as_json()
        if self.incomplete:
            out["incomplete"] = True
        return out


TextSink = Callable[[str], None]
"""Receives streamed text as it arrives (a provider calls it once per delta)."""

RestartSink = Callable[[str, str], None]
"""Told (deployment, reason) that the text streamed since the last restart is void: the
next delta begins another attempt's answer from its beginning."""


class CooldownBasis(StrEnum):
    """Where a cooldown's length came from: what `support-ask cooldowns` says about how it ends."""

    POLICY = "policy"  # policy.cooldown
    QUOTA = "quota"  # policy.quota_cooldown: a billing or quota failure with no reset named
    PROVIDER = "provider"  # the provider named the wait (Retry-After, a reset time)
    CAPPED = "capped"  # a longer wait was asked for (or found): capped at policy.max_cooldown
    ESCALATED = "escalated"  # doubled: the probe after the last cooldown failed


@record
class Cooldown:
    """A deployment (or one of its keys) skipped until `until` (wall-clock epoch seconds).

    `name` is the deployment's name, or for one of its keys the pair's name
    (`gateway.engine.credentials.key_name`). Only what classifies the
    failure is kept (its kind, HTTP status, the provider's error code): never provider text,
    which can echo the question or the prompt into a file shared by every invocation.
    `trips` counts the cooldowns taken in a row with no success between them; `credential`
    binds it to one key value (a salted fingerprint): once the key differs, it is void.
    """

    name: str
    deployment: str  # the deployment cooled, or the one whose key is
    until: float
    kind: ErrorKind
    started: float
    status: int | None = None
    code: str | None = None
    trips: int = 1
    basis: CooldownBasis = CooldownBasis.POLICY
    credential: str | None = field(default=None, repr=False)  # salted fingerprint, never a key
