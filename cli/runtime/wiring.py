"""Builds the real things the engine runs against: config, state store, prompt, articles,
providers, clock. Each step turns a user's mistake into a CliError naming the fix.

Heavy modules (the engine, providers, tokenizer) are imported inside the functions that
need them, so `--help`, `cooldowns` and `config check` never pay for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.model import Article, Attempt, Request
from gateway.record import replace

if TYPE_CHECKING:
    import httpx

    from gateway.answers.language import Language
    from gateway.answers.masking import Masked
    from gateway.batch.jobs import JobStore
    from gateway.config import Config, Deployment
    from gateway.config.location import RedisURL
    from gateway.engine.loop import Engine
    from gateway.knowledge.index import Index
    from gateway.knowledge.prompting import Prompting
    from gateway.knowledge.query import Query
    from gateway.knowledge.store import RefreshProgress
    from gateway.model import Turn
    from gateway.providers.batchapi import BatchApi, Caps
    from gateway.seams import Allowance, Clock, Provider, RandomSource, Sleeper, StateStore
    from gateway.secrets.key import Secret
    from gateway.secrets.redactor import Redactor

Warn = Callable[[str], None]


def load_settings(flag: Path | None, *, environ: Mapping[str, str], notice: Warn) -> Config:
    """The config named by --config, $SUPPORT_ASK_CONFIG, ./support-ask.yaml or the user
    config dir; else the bundled default, with a notice. Raises ConfigError (exit 78)."""
    from gateway.config import find_config, load_config, load_default_config

    path = find_config(flag, environ, Path.cwd())
    if path is None:
        notice(
            "no config found; using the bundled default (its last deployment, local, "
            "answers offline; `support-ask config check` shows where a config can go)"
        )
        return load_default_config()
    return load_config(path)


def state_location(
    flag: str | None, *, environ: Mapping[str, str], config: Config
) -> Path | RedisURL:
    """--state, $SUPPORT_ASK_STATE, state.url, state.path, the user state dir: a path for
    the file store, a redis:// URL for Redis. A URL that cannot be used is the user's to
    fix (a flag: 2; the variable: 78), said without its password."""
    from gateway.config import resolve_state

    try:
        return resolve_state(flag, environ, config)
    except ValueError as exc:  # a LocationError: imported only with a URL to parse
        origin = "--state" if flag else "$SUPPORT_ASK_STATE"
        raise CliError(
            f"{origin}: {exc}",
            ExitCode.USAGE if flag else ExitCode.CONFIG,
            fix="give a file path, or redis://[user:password@]host:port/db (rediss:// for TLS)",
        ) from None


def open_allowance(
    location: Path | RedisURL, store: StateStore, *, warn: Warn, config: Config
) -> Allowance:
    """The fleet's shared limits and retry budget where the state is: in Redis beside
    `store`'s cooldowns (its connection, its prefix), or in a file beside the state file
    (`<state>.limits.json`)."""
    from gateway.limits.file import FileAllowance

    if isinstance(location, Path):
        return FileAllowance(location.with_name(location.stem + ".limits.json"), warn=warn)
    from gateway.state.redis import RedisStore

    if isinstance(store, RedisStore):
        from gateway.limits.redis import RedisAllowance

        return RedisAllowance(store, prefix=config.state.prefix)
    from gateway.config import local_state_path

    path = local_state_path(config)  # a store that is not Redis's own: this machine's file
    return FileAllowance(path.with_name(path.stem + ".limits.json"), warn=warn)


def build_batch_api(
    deployment: Deployment,
    environ: Mapping[str, str],
    *,
    transport: httpx.BaseTransport | None = None,
    caps: Caps | None = None,
) -> BatchApi:
    """The Batch API of `deployment`'s provider, with its first key (a deployment whose
    provider has none: exit 2, naming the fix); `transport` replaces the network, `caps`
    the provider's own on what one batch holds."""
    from gateway.providers.batchapi import NoBatchApi, batch_api
    from gateway.secrets.key import read_key

    variables = deployment.key_variables
    key = read_key(environ, variables[0]) if variables else None
    try:
        return batch_api(deployment, key, transport=transport, caps=caps)
    except NoBatchApi as exc:
        raise CliError(str(exc), ExitCode.USAGE, fix=exc.fix) from None


def open_jobs(location: Path | RedisURL, store: StateStore, *, config: Config) -> JobStore:
    """Where provider batch jobs are kept: in Redis beside `store`'s cooldowns, or in a
    folder beside the state file (`<state>.batches/`), so whoever shares the state can
    collect a job another machine sent."""
    from gateway.batch.jobs import FileJobs, RedisJobs
    from gateway.config import local_state_path

    def folder(path: Path) -> FileJobs:
        return FileJobs(path.with_name(path.stem + ".batches"))

    if isinstance(location, Path):
        return folder(location)
    from gateway.state.redis import RedisStore

    local = folder(local_state_path(config))
    if isinstance(store, RedisStore):
        return RedisJobs(store, prefix=config.state.prefix, local=local)
    return local


def open_store(
    location: Path | RedisURL,
    *,
    warn: Warn,
    config: Config | None = None,
    read_only: bool = False,
) -> StateStore:
    """The state store at `location`. With `config`, records of names it no longer has
    are pruned, no deadline beyond its longest max_cooldown is believed, and Redis gets
    its prefix and timeouts. `read_only`: for listings, which report a bad state and
    never move, rewrite or create anything."""
    from gateway.state.file import FileStore
    from gateway.state.records import DEFAULT_BOUNDS, StateBounds

    limits, known = DEFAULT_BOUNDS, None
    if config is not None:
        from gateway.engine.credentials import record_names

        longest = max(d.policy.max_cooldown for d in config.all_deployments())
        limits = StateBounds(max_cooldown=longest, remember=max(longest, DEFAULT_BOUNDS.remember))
        known = record_names(config)
    if isinstance(location, Path):
        return FileStore(location, warn=warn, read_only=read_only, limits=limits, known=known)
    from gateway.config import StateSettings, local_state_path
    from gateway.state.redis import RedisStore

    settings = StateSettings() if config is None else config.state
    local = local_state_path(config) if config is not None else None

    def fallback() -> StateStore:
        if local is None:
            from gateway.state.memory import MemoryStore

            return MemoryStore(limits=limits, known=known)
        return FileStore(local, warn=warn, read_only=read_only, limits=limits, known=known)

    return RedisStore(
        location,
        fallback=fallback,
        warn=warn,
        prefix=settings.prefix,
        connect_timeout=settings.connect_timeout,
        timeout=settings.timeout,
        limits=limits,
        known=known,
        read_only=read_only,
    )


def read_articles(paths: Sequence[Path], *, warn: Warn) -> tuple[Article, ...]:
    """The articles under `paths` (folders read recursively). A path that does not exist,
    or paths holding no readable article, are errors (66): answering from a knowledge base
    that silently shrank would be worse than stopping."""
    if not paths:
        return ()
    check_exist(paths)
    from gateway.knowledge.files import ArticleCaps, SetTooLarge
    from gateway.knowledge.load import ArticlesError, load_articles

    try:
        articles, warnings = load_articles(paths, ArticleCaps())
    except SetTooLarge as exc:
        raise CliError(exc.message, ExitCode.NOINPUT) from None
    except ArticlesError as exc:
        for warning in exc.warnings:
            warn(warning)
        raise CliError(exc.message, ExitCode.NOINPUT, fix=ARTICLES_FIX) from None
    for warning in warnings:
        warn(warning)
    return tuple(articles)


def cache_dir() -> Path:
    """The user cache dir, where article indexes are kept (the config cache's own dir:
    worked out without importing platformdirs in the plain cases, as the other dirs are)."""
    from gateway.config.find import user_dir

    return user_dir("cache")


ARTICLES_FIX = (
    "point --articles at a folder or files holding .md, .txt or .html articles (UTF-8 text)"
)


def article_paths(given: Sequence[Path], config: Config) -> tuple[Path, ...]:
    """The help centre: --articles, else the config's articles.paths."""
    return tuple(given) or config.articles.paths


def open_help_centre(
    given: Sequence[Path],
    config: Config,
    *,
    whole: bool,
    warn: Warn,
    progress: Callable[[RefreshProgress], None] | None = None,
    keep: bool | None = None,
    walk: bool = False,
) -> Index | None:
    """The help centre under the paths `given` (else the config's articles.paths), less
    what articles.exclude leaves out, read now or through its kept index (None: no paths),
    which is trusted as it is under `articles.refresh: on_index` unless `walk` (the index
    command's). A path that does not exist, paths holding no readable article, or a set
    past the caps are errors (66)."""
    paths = article_paths(given, config)
    if not paths:
        return None
    check_exist(paths, config=None if given else config)
    from gateway.config.model import RefreshRule
    from gateway.knowledge.centre import open_centre
    from gateway.knowledge.files import ArticleCaps, SetTooLarge
    from gateway.knowledge.load import ArticlesError

    settings = config.articles
    limits = ArticleCaps(settings.max_article_bytes, settings.max_set_bytes, settings.max_set_files)
    try:
        return open_centre(
            paths,
            limits=limits,
            cache_dir=cache_dir,
            whole=whole,
            warn=warn,
            progress=progress,
            keep=keep,
            exclude=settings.exclude,
            trust=not walk and settings.refresh is RefreshRule.ON_INDEX,
        )
    except SetTooLarge as exc:
        raise CliError(exc.message, ExitCode.NOINPUT) from None
    except ArticlesError as exc:
        raise CliError(exc.message, ExitCode.NOINPUT, fix=ARTICLES_FIX) from None


def check_exist(paths: Sequence[Path], *, config: Config | None = None) -> None:
    """Every path exists, or exit 66 naming those that do not (and, for paths that came from
    `config`'s articles.paths, the file to fix)."""
    missing = [p for p in paths if not p.exists()]
    if missing:
        shown = ", ".join(str(p) for p in missing)
        if config is None:
            raise CliError(
                f"articles path not found: {shown}",
                ExitCode.NOINPUT,
                fix="pass --articles with an existing folder or .md/.txt/.html files",
            )
        raise CliError(
            f"articles path not found: {shown} (articles.paths in {config.source})",
            ExitCode.NOINPUT,
            fix=f"fix articles.paths in {config.source}, or pass --articles with an "
            "existing folder",
        )


def prompting(
    config: Config,
    question: str,
    index: Index | None,
    *,
    budget: int | None,
    product: str | None = None,
    query: str | Query | None = None,
    turns: tuple[Turn, ...] = (),
    language: Language | None = None,
) -> Prompting:
    """The requests for `question`: `.request()` holds every article when they fit
    `budget` tokens (None: no limit), else the passages that answer `query` (default: the
    question) best, up to the budget; `.within(tokens)` less, for a smaller window (the
    engine's Compactor)."""
    from gateway.answers.phrases import wording
    from gateway.knowledge.prompting import Prompting

    return Prompting(
        template=_template(config),
        product=product_name(config, product),
        question=question,
        max_output_tokens=config.max_output_tokens,
        index=index,
        budget=budget,
        query=query,
        turns=turns,
        language=language,
        wording=() if language is None else wording(language.code, config.answers),
        min_relevance=config.articles.min_relevance,
    )


def masked_prompting(
    config: Config,
    masked: Masked,
    turns: tuple[Turn, ...],
    index: Index | None,
    *,
    budget: int | None,
    product: str | None = None,
    language: Language | None = None,
) -> Prompting:
    """`prompting` for a masked question and the (masked) thread before it: the help
    centre is searched for the chat's weighted words without the placeholders, so no
    customer data (nor a placeholder's name) reaches it; the reply asked in `language`."""
    from gateway.answers.masking import without_placeholders
    from gateway.knowledge.query import Query

    question = masked.question
    query = Query.of_chat(
        without_placeholders(question),
        [replace(t, content=without_placeholders(t.content)) for t in turns],
    )
    return prompting(
        config,
        question,
        index,
        budget=budget,
        product=product,
        query=query,
        turns=turns,
        language=language,
    )


def forced_language(flag: str | None) -> str | None:
    """--language as an ISO 639-1 code (`DE` is `de`); anything else is a usage error."""
    if flag is None:
        return None
    from gateway.answers.language import code_problem

    problem = code_problem(flag)
    if problem is not None:
        raise CliError(f"--language: {problem}", ExitCode.USAGE, fix="e.g. --language de")
    return flag.strip().lower()


def reply_language(
    config: Config, question: str, turns: Sequence[Turn], forced: str | None, warn: Warn
) -> Language:
    """The language to reply in: --language, else the customer's among
    `answers.languages` (the current message's, or too short to tell, their earlier
    messages'), else `answers.default_language`."""
    from gateway.answers.language import DetectorMissing, choose, fasttext_scores
    from gateway.model import Role

    earlier = [t.content for t in turns if t.role is Role.CUSTOMER]
    default = config.answers.default_language
    allowed = frozenset(config.answers.languages)
    try:
        return choose(
            question,
            earlier,
            default=default,
            allowed=allowed,
            forced=forced,
            scores=fasttext_scores,
        )
    except DetectorMissing as exc:
        warn(f"the customer's language cannot be detected ({exc}); reinstall support-ask")
        return choose("", (), default=default, forced=forced, scores=fasttext_scores)


def request_for(
    config: Config,
    question: str,
    index: Index | None,
    *,
    budget: int | None,
    product: str | None = None,
) -> Request:
    """The first request for `question` (see `prompting`)."""
    return prompting(config, question, index, budget=budget, product=product).request()


def product_name(config: Config, product: str | None) -> str:
    """--product, else the config's."""
    return product if product is not None and product.strip() else config.product


def _template(config: Config) -> str:
    from prompts import PromptError, load_prompt

    try:
        return load_prompt(config.prompt)
    except PromptError as exc:
        raise CliError(exc.message, ExitCode.CONFIG) from None


def build_request(
    config: Config, question: str, articles: Sequence[Article], *, product: str | None = None
) -> Request:
    """The rendered portable prompt (product from --product, else the config) with every
    article whole, and the question."""
    from gateway.knowledge.select import everything

    whole = everything(tuple(articles))
    return prompting(config, question, None, budget=None, product=product).build(whole)


def build_engine(
    config: Config,
    *,
    store: StateStore,
    clock: Clock,
    sleeper: Sleeper,
    rng: RandomSource,
    environ: Mapping[str, str] | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
    transport: httpx.BaseTransport | None = None,
    redactor: Redactor | None = None,
    allowance: Allowance | None = None,
) -> Engine:
    """The engine with the real provider adapters (built only when a deployment is called)
    and the offline tokenizer; `transport` replaces the network (simulate, tests).

    Each adapter's answers, streamed text and errors pass `redactor` (by default the one
    for this config and environment), so no key reaches any output, even echoed."""
    from gateway.engine.loop import Engine
    from gateway.providers import build_provider
    from gateway.providers.redaction import RedactingProvider
    from gateway.secrets.redactor import redactor_for
    from gateway.tokens import count_tokens

    env = os.environ if environ is None else environ
    scrubbing = redactor if redactor is not None else redactor_for(config, env)

    def providers(deployment: Deployment, key: Secret | None) -> Provider:
        # The adapters time their deadlines on the engine's clock: virtual time in
        # `simulate` trips them exactly where real time would.
        adapter = build_provider(deployment, key, transport=transport, clock=clock)
        return RedactingProvider(adapter, scrubbing) if scrubbing else adapter

    return Engine(
        config,
        providers=providers,
        store=store,
        clock=clock,
        sleeper=sleeper,
        rng=rng,
        environ=env,
        count_tokens=count_tokens,
        on_attempt=on_attempt,
        allowance=allowance,
    )
