"""`support-ask simulate --fail primary=429x3`: the real engine, adapters and classifier
against in-process fake providers (gateway.simulate), in virtual time by default.

Judgement calls:
- Every simulated deployment gets a dummy key, so none is skipped for a missing key and
  no real key is ever handed to anything (nothing leaves the process either way).
- Virtual time starts at the real wall clock, and a real --state file gets real times
  (each cooldown from the real now, for as long as it lasts), so later real invocations
  read it as they would their own.
- The tables always print (that is the point of simulate) unless -q; with several
  requests the exit code is the last request's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.runtime.common import CONFIG_HELP, STATE_HELP, help_of
from cli.runtime.exitcodes import ExitCode, exit_code_for
from cli.runtime.failure import CliError
from cli.runtime.option_params import ask_option
from cli.runtime.options import AskOptions, Command
from gateway.model import Status
from gateway.record import record

if TYPE_CHECKING:
    from cli.runtime.session import Session
    from cli.terminal.diag import Diag
    from gateway.model import Result
    from gateway.seams import StateStore

DEFAULT_QUESTION = "How do I reset my password?"
DEFAULT_ARTICLES = Path("examples/kb")


@record
class SimOptions:
    fail: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    articles: tuple[Path, ...] = ()
    requests: int = 1
    real_time: bool = False
    stream: bool = False
    allow_restart: bool = False
    json: bool = False
    quiet: bool = False
    config: Path | None = None
    state: str | None = None
    seed: int | None = None
    product: str | None = None
    max_article_tokens: str | None = None


def _summary_line(number: int, result: Result) -> str:
    waited = sum(a.wait_s for a in result.attempts)
    served = str(result.status)
    if result.deployment and result.status in (Status.ANSWERED, Status.REFUSED):
        served = f"{result.status} by {result.deployment}"
    calls = result.served_attempts
    return (
        f"request {number}: {served} after {calls} call{'s' if calls != 1 else ''}, "
        f"waited {waited:.1f}s, {result.elapsed_s:.1f}s in all"
    )


def run_simulate(opts: SimOptions, diag: Diag) -> int:
    from cli.commands.outcome import check_restart
    from cli.runtime.session import Simulation, open_session

    check_restart(opts.allow_restart, stream=opts.stream, json_lines=opts.json)
    if opts.requests < 1:
        raise CliError("--requests must be at least 1", ExitCode.USAGE)
    ask = AskOptions(
        articles=opts.articles,
        config=opts.config,
        state=opts.state,
        product=opts.product,
        max_article_tokens=opts.max_article_tokens,
    )
    simulation = Simulation(faults=opts.fail, real_time=opts.real_time)
    rng = None if opts.seed is None else _Seeded(opts.seed)
    # Without --articles or the config's articles.paths: the sample's, when at hand.
    default = (DEFAULT_ARTICLES,) if DEFAULT_ARTICLES.is_dir() else ()
    with open_session(
        ask, diag, simulation=simulation, rng=rng, default_articles=default
    ) as session:
        return _simulate(opts, session)


def _simulate(opts: SimOptions, session: Session) -> int:
    from cli.commands.outcome import report_outcome
    from cli.terminal.diag import is_tty
    from cli.terminal.output import StreamSink, write_json, write_text
    from cli.terminal.render import AttemptsDisplay

    diag = session.diag
    question = " ".join(opts.words).strip() or DEFAULT_QUESTION
    session.open_help_centre()
    prompts = session.prompting(question)
    request = prompts.request()
    store = _store(opts, session)
    transport = session.transport
    assert transport is not None  # a simulation's

    mode = "real time" if opts.real_time else "virtual time: waits are shown, not taken"
    faulted = ", ".join(opts.fail) or "no faults"
    diag.notice(f"simulating {opts.requests} request(s) ({faulted}; {mode})")

    # Virtual time runs in an instant: a live table only makes sense in real time; with
    # answers streamed onto the same terminal it is cleared as the text starts.
    live = opts.real_time and diag.animate
    until_text = opts.stream and is_tty(sys.stdout)
    code = ExitCode.ANSWERED
    summary: list[str] = []
    for number in range(1, opts.requests + 1):
        title = f"request {number}/{opts.requests}"
        if live:
            diag.notice(title)
        display = AttemptsDisplay(diag, live=live, show_final=not diag.quiet, until_text=until_text)
        sink = (
            StreamSink(json_lines=opts.json, before_first=display.text_starts)
            if opts.stream
            else None
        )
        with display:
            engine = session.engine(
                store=store,
                sleeper=display if opts.real_time else session.clock,
                on_attempt=display.add,
            )
            try:
                restart = sink.restart if sink is not None and opts.allow_restart else None
                result = engine.ask(request, on_text=sink, on_restart=restart, compact=prompts)
            finally:
                engine.close()
        if sink is not None:
            sink.end_line()
        display.print_final(title=title)
        if opts.json:
            write_json(result, json_lines=opts.stream)
        elif result.answer is not None and not (sink is not None and sink.wrote):
            write_text(result.answer)
        report_outcome(diag, result, session.config)
        summary.append(_summary_line(number, result))
        code = exit_code_for(result)

    if opts.requests > 1 or opts.fail:
        for line in summary:
            diag.notice(line)
        calls = ", ".join(f"{name} {n}" for name, n in transport.calls.items())
        diag.notice(f"calls received: {calls}")
    return code


def _store(opts: SimOptions, session: Session) -> StateStore:
    """A temporary in-memory state, or the --state a real run would use."""
    if opts.state is None:
        from gateway.state.memory import MemoryStore

        return MemoryStore()
    store = session.open_store()
    if opts.real_time:
        return store
    from gateway.state.realtime import RealTimeStore

    # Other invocations share that file: what goes in it is real time, not virtual.
    return RealTimeStore(store)


class _Seeded:
    """Jitter from a seeded generator: the same tables on every run (--seed)."""

    def __init__(self, seed: int) -> None:
        import random

        self._random = random.Random(seed)

    def random(self) -> float:
        return self._random.random()


Product = Annotated[str | None, ask_option("product", Command.SIMULATE)]
MaxArticleTokens = Annotated[str | None, ask_option("max_article_tokens", Command.SIMULATE)]


def register(app: typer.Typer) -> None:
    @app.command("simulate", help=help_of("simulate"))
    def simulate(
        question: Annotated[
            list[str] | None,
            typer.Argument(
                help=f'The question (default: "{DEFAULT_QUESTION}").',
                metavar="QUESTION",
                show_default=False,
            ),
        ] = None,
        fail: Annotated[
            list[str] | None,
            typer.Option(
                "--fail",
                "-f",
                metavar="NAME=SPEC",
                help="Break a deployment, e.g. primary=429x3@2s, fallback=503x*, "
                "primary=timeout, reset, refusal, overflow, 400, 401, 404, cut:5, "
                "quota. Repeatable.",
                show_default=False,
            ),
        ] = None,
        requests: Annotated[
            int,
            typer.Option(
                "--requests",
                "-n",
                metavar="N",
                help="Questions to send in a row "
                "(the second shows a cooled-down deployment skipped).",
            ),
        ] = 1,
        real_time: Annotated[
            bool, typer.Option("--real-time", help="Really wait (default: virtual time).")
        ] = False,
        articles: Annotated[
            list[Path] | None,
            typer.Option(
                "--articles",
                "-a",
                help="Articles (default: ./examples/kb if present).",
                metavar="PATH",
                show_default=False,
            ),
        ] = None,
        product: Product = None,
        max_article_tokens: MaxArticleTokens = None,
        stream: Annotated[bool, typer.Option("--stream", help="Stream the answers.")] = False,
        allow_restart: Annotated[
            bool,
            typer.Option(
                "--allow-restart",
                help="With --stream --json: restart events instead of stopping a broken stream.",
            ),
        ] = False,
        json_out: Annotated[
            bool, typer.Option("--json", help="One JSON object per request.")
        ] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No tables or notices.")] = False,
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help=CONFIG_HELP, metavar="FILE")
        ] = None,
        state: Annotated[
            str | None,
            typer.Option(
                "--state",
                help=STATE_HELP + " Default here: a temporary, in-memory state.",
                metavar="FILE|URL",
            ),
        ] = None,
        seed: Annotated[
            int | None,
            typer.Option("--seed", help="Seed the jitter for repeatable waits.", metavar="N"),
        ] = None,
    ) -> None:
        from cli.runtime.guard import guarded
        from cli.terminal.diag import Diag

        diag = Diag(quiet=quiet)
        opts = SimOptions(
            fail=tuple(fail or ()),
            words=tuple(question or ()),
            articles=tuple(articles or ()),
            requests=requests,
            real_time=real_time,
            stream=stream,
            allow_restart=allow_restart,
            json=json_out,
            quiet=quiet,
            config=config,
            state=state,
            seed=seed,
            product=product,
            max_article_tokens=max_article_tokens,
        )
        guarded(diag, False, lambda: run_simulate(opts, diag))


__all__ = ["DEFAULT_QUESTION", "register", "run_simulate"]
