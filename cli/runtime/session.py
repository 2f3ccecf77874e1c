"""What every command's questions are asked under, wired in one place: `open_session`.

`ask`, `batch`, `eval` and `simulate` each open one session: the config with the command
line's overrides, its keys checked (or, simulated, dummy keys and fake servers that fail
as told), the run's one redactor on stdout, stderr and the logs, the clock; and, when the
command asks for them, the help centre with the passages' budget, the state store, the
attempt log and engines over all of these. So a question is sent the same passages,
from the same help centre (--articles, else the config's articles.paths, less
articles.exclude), within the same budget and compacted the same way for a smaller
window, whichever command asks it.

Everything is built through cli.runtime.wiring, which turns each of the user's mistakes
into a CliError naming the fix.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from cli.runtime import wiring
from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.options import AskOptions
from gateway.record import record

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.answers.language import Language
    from gateway.answers.masking import Masked
    from gateway.batch.jobs import JobStore
    from gateway.config import Config
    from gateway.engine.loop import Engine
    from gateway.knowledge.index import Index
    from gateway.knowledge.prompting import Prompting
    from gateway.model import Attempt, Turn
    from gateway.observe.attemptlog import AttemptLog
    from gateway.seams import Allowance, RandomSource, Sleeper, StateStore
    from gateway.secrets.redactor import Redactor
    from gateway.simulate import Fault, SimClock, SimulatedTransport


@record
class Simulation:
    """Fake providers instead of the real ones (`simulate`, `eval --simulate`), failing as
    `--fail` says; on virtual time unless `real_time`."""

    faults: tuple[str, ...] = ()
    real_time: bool = False


NO_ARTICLES = (
    "no --articles given: every answer will say the question is not covered "
    "(pass --articles FOLDER, or name it in the config's articles.paths)"
)


class Session:
    """One run's wiring (see the module's docstring). Built by `open_session`."""

    def __init__(
        self,
        opts: AskOptions,
        diag: Diag,
        *,
        config: Config,
        environ: Mapping[str, str],
        redactor: Redactor,
        clock: SimClock,
        rng: RandomSource,
        faults: Mapping[str, Fault] | None,
        default_articles: Sequence[Path] = (),
    ) -> None:
        self.opts = opts
        self.diag = diag
        self.config = config
        self.environ = environ
        self.redactor = redactor
        self.clock = clock  # the run's time: its sleeper too (virtual, simulated)
        self.rng = rng
        self.index: Index | None = None
        self.budget: int | None = None  # the passages' budget in tokens; None: no limit
        # What the user named: --articles, else (neither that nor the config's
        # articles.paths given) the command's own default.
        self._given = tuple(opts.articles) or (
            () if config.articles.paths else tuple(default_articles)
        )
        self._faults = faults  # by deployment; None: the real providers
        self._transport: SimulatedTransport | None = None
        self._abandoned = False

    @property
    def articles(self) -> tuple[Path, ...]:
        """The help centre's paths: --articles, else the config's articles.paths, else the
        command's default (() when none)."""
        return wiring.article_paths(self._given, self.config)

    def warn_about_articles(self, no_articles: str = NO_ARTICLES) -> None:
        """Say on stderr that there is no help centre (`no_articles`), or that the product
        named is the sample's while the articles are not."""
        from cli.runtime.sample import product_warning

        paths = self.articles
        if not paths:
            self.diag.warn(no_articles)
        misfit = product_warning(self.config, self.opts.product, paths)
        if misfit is not None:
            self.diag.warn(misfit)

    def open_help_centre(self) -> Index | None:
        """The help centre every question of the run is answered from (`articles`; None:
        none), its index built or refreshed now with the progress on stderr, and the
        passages' budget from --max-article-tokens, else the config's articles.max_tokens.
        Closed with the session."""
        from cli.terminal.indexing import IndexProgress

        budget, whole = article_budget(self.opts.max_article_tokens, self.config)
        with IndexProgress(self.diag, silent=self.diag.quiet) as progress:
            self.index = wiring.open_help_centre(
                self._given, self.config, whole=whole, warn=self.diag.warn, progress=progress
            )
        self.budget = budget
        return self.index

    def prompting(
        self, question: str, product: str | None = None, *, index: Index | None = None
    ) -> Prompting:
        """The requests for `question` (its own `product`, else --product, else the
        config's): the passages that answer it within the budget, fewer on demand for a
        smaller window (the engine's Compactor). `index`: a view of the session's help
        centre to choose them from instead (a thread-safe one, for batch's workers)."""
        return wiring.prompting(
            self.config,
            question,
            self.index if index is None else index,
            budget=self.budget,
            product=product or self.opts.product,
        )

    def chat_prompting(
        self,
        masked: Masked,
        turns: tuple[Turn, ...],
        *,
        language: Language,
        product: str | None = None,
        index: Index | None = None,
    ) -> Prompting:
        """`prompting` for a customer's masked question and the (masked) chat before it,
        the reply asked in `language`."""
        return wiring.masked_prompting(
            self.config,
            masked,
            turns,
            self.index if index is None else index,
            budget=self.budget,
            product=product or self.opts.product,
            language=language,
        )

    def open_store(self) -> StateStore:
        """The shared state at --state, $SUPPORT_ASK_STATE, the config's, the user's."""
        location = wiring.state_location(self.opts.state, environ=self.environ, config=self.config)
        return wiring.open_store(location, warn=self.diag.warn, config=self.config)

    def open_log(self) -> AttemptLog | None:
        """The attempt log at --log, else the config's (None: --no-log, or logging off)."""
        from gateway.observe.attemptlog import open_log

        return open_log(
            flag=self.opts.log,
            no_log=self.opts.no_log,
            environ=self.environ,
            settings=self.config.log,
            warn=self.diag.warn,
        )

    def engine(
        self,
        *,
        store: StateStore,
        sleeper: Sleeper | None = None,
        on_attempt: Callable[[Attempt], None] | None = None,
        config: Config | None = None,
    ) -> Engine:
        """An engine over the session's config (or `config`, one made from it), clock,
        keys and redactor: the real providers, or the simulation's fakes."""
        return wiring.build_engine(
            self.config if config is None else config,
            store=store,
            clock=self.clock,
            sleeper=self.clock if sleeper is None else sleeper,
            rng=self.rng,
            environ=self.environ,
            on_attempt=on_attempt,
            transport=self.transport,
            redactor=self.redactor,
            allowance=self.open_allowance(store),
        )

    def open_allowance(self, store: StateStore) -> Allowance | None:
        """The fleet's shared limits and retry budget, beside `store`'s cooldowns (None in
        a simulation: its virtual time and made-up failures draw on no real allowance)."""
        if self._faults is not None:
            return None
        location = wiring.state_location(self.opts.state, environ=self.environ, config=self.config)
        return wiring.open_allowance(location, store, warn=self.diag.warn, config=self.config)

    def open_jobs(self, store: StateStore) -> JobStore:
        """Where provider batch jobs are kept, beside `store`'s cooldowns: in its Redis, or
        in a folder beside the state file (`<state>.batches/`)."""
        location = wiring.state_location(self.opts.state, environ=self.environ, config=self.config)
        return wiring.open_jobs(location, store, config=self.config)

    @property
    def transport(self) -> SimulatedTransport | None:
        """The fake servers every engine of a simulation calls (None: the real ones). With
        a help centre they answer from the passages the prompt holds, as a model that
        follows the prompt would; without, a generic line."""
        if self._faults is None:
            return None
        if self._transport is None:
            from gateway.simulate import SimulatedTransport, prompt_answerer

            answerer = None
            if self.index is not None:
                answerer = prompt_answerer(lambda question: self.prompting(question).request())
            self._transport = SimulatedTransport(
                self.config.all_deployments(), self._faults, clock=self.clock, answerer=answerer
            )
        return self._transport

    def abandon(self) -> None:
        """Leave the help centre open at the end: threads still using it (a batch stopped
        by a second signal) are ended by the process's exit."""
        self._abandoned = True

    def close(self) -> None:
        if self.index is not None and not self._abandoned:
            self.index.close()
            self.index = None


@contextmanager
def open_session(
    opts: AskOptions,
    diag: Diag,
    *,
    simulation: Simulation | None = None,
    rng: RandomSource | None = None,
    default_articles: Sequence[Path] = (),
) -> Iterator[Session]:
    """The session of a run: the config named by --config (and the rest), with -d,
    --budget and --timeout applied; its keys checked (a value that cannot be a key: exit
    78 before any call), or for a simulation every key a dummy one; logging on stderr as
    -v and --debug say, through the run's one redactor. `default_articles`: the help
    centre when neither --articles nor the config's articles.paths names one."""
    from cli.runtime import overrides
    from cli.runtime.logsetup import logging_to_stderr
    from gateway.clock import SystemClock, VirtualClock
    from gateway.secrets.redactor import redactor_for

    environ: Mapping[str, str] = opts.environ
    config = wiring.load_settings(opts.config, environ=environ, notice=diag.notice)
    config = overrides.apply(
        config, deployments=opts.deployments, budget=opts.budget, timeout=opts.timeout
    )
    faults: Mapping[str, Fault] | None = None
    clock: SimClock = SystemClock()
    if simulation is None:
        from gateway.config.keys import check_keys

        check_keys(config, environ)
    else:
        from gateway.simulate import simulated_config, simulated_environ

        faults = _faults(simulation, config)
        environ = simulated_environ(config, environ)
        config = simulated_config(config)
        if not simulation.real_time:
            clock = VirtualClock(start_wall=time.time())
    redactor = redactor_for(config, environ)  # the run's one redactor, for every output
    if simulation is None:  # a simulation's environment holds no real key to scrub
        from cli.terminal.scrubbed import protect

        protect(redactor)
    with logging_to_stderr(verbose=opts.verbose, debug=opts.debug, redactor=redactor):
        session = Session(
            opts,
            diag,
            config=config,
            environ=environ,
            redactor=redactor,
            clock=clock,
            # Real jitter even on virtual time: it only shapes the waits shown.
            rng=SystemClock() if rng is None else rng,
            faults=faults,
            default_articles=default_articles,
        )
        try:
            yield session
        finally:
            session.close()


def _faults(simulation: Simulation, config: Config) -> Mapping[str, Fault]:
    from gateway.simulate import check_names, parse_faults

    try:
        faults = parse_faults(simulation.faults)
        check_names(faults, config.all_deployments())
    except ValueError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None
    return faults


ALL = "all"


def article_budget(flag: str | None, config: Config) -> tuple[int | None, bool]:
    """The passages' budget in tokens (None: no limit) and whether every article is sent
    whole (`all`), from --max-article-tokens, else the config's articles.max_tokens."""
    if flag is None:
        budget = config.articles.max_tokens
        return budget, budget is None
    value = flag.strip().lower()
    if value == ALL:
        return None, True
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise CliError(
            f"--max-article-tokens takes a whole number of tokens or `all`, not {flag!r}",
            ExitCode.USAGE,
            fix="e.g. --max-article-tokens 6000, or --max-article-tokens all",
        )
    return number, False
