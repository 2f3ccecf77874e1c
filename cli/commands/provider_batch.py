"""`support-ask batch FILE --provider-batch` and `batch --status ID`: a backlog through the
first deployment's provider Batch API, at the batch price.

Sending: every question is prepared exactly as `batch` prepares it (masked, in its
language, its own passages within the budget, fitted to the deployment's window; a
question the help centre does not cover is handed off and never sent), the job is sent,
and what was sent (the batch's id, the deployment, each question's id, line and custom
id, the input's path; never a question's text or a key) is kept where the state is, so
any machine sharing that state can collect it. stdout gets the id; exit 0. A backlog
past what one of the provider's batches holds (its adapter's `caps`) goes as several,
kept as one job under one id (`gateway.providers.batchapi.parts`).

Collecting: the job (each of its batches) is looked at every `--poll-every` seconds (0:
once) until it is over;
then the input is read again, each question prepared again (the same request, and the
masking its answer is unmasked with, which is never kept), and one record written per
line, as `batch` writes it, with `answered_via` (`gateway.batch.jobs.AnsweredVia`). A
request the provider failed, expired or cancelled, or whose reply is no answer, is asked
again through the ordinary engine (retries, fallback), unless `--no-fallback`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.record import replace

if TYPE_CHECKING:
    from cli.commands.batch_ask import Asker, Prepared
    from cli.commands.batch_options import BatchOptions
    from cli.runtime.options import AskOptions
    from cli.runtime.session import Session
    from cli.terminal.diag import Diag
    from gateway.batch.jobs import AnsweredVia, JobStore, KeptJob
    from gateway.config import Config, Deployment
    from gateway.engine.loop import Engine
    from gateway.model import ProviderError, Request, Result
    from gateway.providers.batchapi import BatchApi, ItemResult, Snapshot
    from gateway.seams import Compactor, StateStore


def submit(opts: BatchOptions, session: Session) -> int:
    from gateway.batch import BadLine, Question, read_items
    from gateway.batch.jobs import JobItem, KeptJob
    from gateway.providers.batchapi import Entry

    deployment = _first(session.config)
    api = _api(session, deployment)
    store = session.open_store()
    jobs = session.open_jobs(store)
    assert opts.source is not None
    source = str(Path(opts.source).resolve())
    if opts.resume:
        kept = _latest(jobs, source)
        if kept is not None:
            session.diag.notice(f"collecting batch {kept.batch_id}, sent from {opts.source}")
            api.close()
            return collect(opts, session, kept.batch_id)
    _prepare_centre(session)
    asker = _asker(session, log=False)
    entries: list[Entry] = []
    items: list[JobItem] = []
    unsent = 0
    with open(source, "rb") as f:
        for item in read_items(f, opts.format):
            if isinstance(item, BadLine):
                continue  # its record is written when the job is collected
            assert isinstance(item, Question)
            request = _request_for(asker.prepare(item), deployment)
            if request is None:
                unsent += 1  # handed off unasked, or too large: dealt with on collecting
                continue
            custom_id = f"line-{item.line}"
            entries.append(Entry(custom_id, request))
            items.append(JobItem(custom_id, item.id, item.line))
    if not entries:
        raise CliError(
            f"no question of {opts.source} needs a model (each is handed off or invalid)",
            ExitCode.NOINPUT,
            fix=f"support-ask batch {opts.source} (without --provider-batch) writes their records",
        )
    from gateway.providers.batchapi.parts import split

    parts, too_large = split(entries, api.caps, api.size)
    unsent += len(too_large)  # past the provider's cap alone: asked through the engine
    if not parts:
        api.close()
        raise CliError(
            f"no question of {opts.source} fits one of {deployment.name}'s batches alone",
            ExitCode.DATAERR,
            fix=f"support-ask batch {opts.source} (without --provider-batch) asks them",
        )
    part_of = {e.custom_id: n for n, part in enumerate(parts) for e in part}
    given = session.opts

    def record(batch_id: str, sent: list[str]) -> KeptJob:
        return KeptJob(
            batch_id,
            deployment.provider,
            deployment.name,
            source,
            time.time(),
            tuple(
                replace(i, part=part_of[i.custom_id])
                for i in items
                if part_of.get(i.custom_id, len(sent)) < len(sent)
            ),
            articles=tuple(str(path.resolve()) for path in session.articles),
            max_article_tokens=given.max_article_tokens,
            product=given.product,
            language=given.language,
            parts=tuple(sent) if len(parts) > 1 else (),
        )

    # Several batches are one job under an id of its own, kept as each is sent: one that
    # fails to go leaves those before it collectable (what it held is asked again).
    job_id = f"support-ask-{os.urandom(6).hex()}" if len(parts) > 1 else ""
    name = f"support-ask-{int(time.time())}"
    sent: list[str] = []
    try:
        for n, part in enumerate(parts):
            snap = api.submit(part, name=name if len(parts) == 1 else f"{name}-{n + 1}")
            sent.append(snap.id)
            _keep(jobs, record(job_id or snap.id, sent))
    except _provider_error() as exc:
        doing = "sending the job"
        if sent:
            doing = (
                f"sending batch {len(sent) + 1} of {len(parts)} (the {len(sent)} sent are kept "
                f"as job {job_id}: `batch --status {job_id}` collects them and asks the rest "
                "through the engine)"
            )
        raise _failed(exc, deployment, doing) from None
    finally:
        api.close()
    job_id = job_id or sent[0]
    print(job_id, flush=True)
    split_into = f" in {len(parts)} batches ({', '.join(sent)})" if len(parts) > 1 else ""
    session.diag.notice(
        f"sent {len(part_of)} questions to {deployment.name}'s Batch API as "
        f"{'job' if split_into else 'batch'} {job_id}{split_into}"
        + (f" ({unsent} not sent: handed off or too large)" if unsent else "")
        + f"; collect with: support-ask batch --status {job_id} --out answers.jsonl"
    )
    return ExitCode.OK


def _keep(jobs: JobStore, job: KeptJob) -> None:
    try:
        jobs.put(job)
    except OSError as exc:
        raise CliError(
            f"batch {job.batches[-1]} was sent, but keeping what was sent failed: "
            f"{exc.strerror or exc}",
            ExitCode.IO_ERROR,
            fix="free some space or fix the state folder's permissions, then send it again "
            "(and cancel that batch at the provider)",
        ) from None


def sent_with(opts: BatchOptions, diag: Diag) -> AskOptions:
    """`opts.ask` with what the job `--status` names was prepared with (`-a`,
    `--max-article-tokens`, `--product`, `--language`) wherever the command line does not
    say, so that its questions are prepared again as they were sent."""
    from cli.runtime.session import open_session
    from gateway.batch.jobs import UnreadableJob
    from gateway.record import replace

    assert opts.status is not None
    ask = opts.ask
    with open_session(ask, diag) as session:
        try:
            job = session.open_jobs(session.open_store()).get(opts.status)
        except UnreadableJob:
            job = None  # collect says what is wrong with it
    if job is None:
        return ask
    return replace(
        ask,
        articles=ask.articles or tuple(Path(p) for p in job.articles),
        max_article_tokens=ask.max_article_tokens or job.max_article_tokens,
        product=ask.product or job.product,
        language=ask.language or job.language,
    )


def collect(opts: BatchOptions, session: Session, batch_id: str) -> int:
    from gateway.batch.jobs import UnreadableJob
    from gateway.providers.batchapi import BatchState

    store = session.open_store()
    jobs = session.open_jobs(store)
    try:
        job = jobs.get(batch_id)
    except UnreadableJob as exc:
        raise CliError(str(exc), ExitCode.CONFIG, fix="send the questions again") from None
    if job is None:
        raise CliError(
            f"no provider batch job {batch_id!r} is kept in this state",
            ExitCode.NOINPUT,
            fix="give the id `batch FILE --provider-batch` printed; on another machine, "
            "share its state (the same --state, or state.url for Redis)",
        )
    deployment = next(
        (d for d in session.config.all_deployments() if d.name == job.deployment), None
    )
    if deployment is None:
        raise CliError(
            f"batch {batch_id} was sent through the deployment {job.deployment}, which this "
            "config does not have",
            ExitCode.CONFIG,
            fix="collect it with the config it was sent with (--config FILE)",
        )
    source = opts.source if opts.source is not None else job.input
    if not Path(source).is_file():
        raise CliError(
            f"the questions file {source} (that batch {batch_id} was sent from) is not here",
            ExitCode.NOINPUT,
            fix=f"pass the same file: support-ask batch FILE --status {batch_id}",
        )
    api = _api(session, deployment)
    try:
        snaps = _poll(api, job, opts, session)
        if snaps is None:
            return ExitCode.TEMPFAIL
        results: dict[str, ItemResult] = {}
        for part, snap in enumerate(snaps):
            if snap.state is not BatchState.FAILED:  # a refused one has no results: rescued
                results |= {r.custom_id: r for r in api.results(snap, job.sent_in(part))}
    except _provider_error() as exc:
        raise _failed(exc, deployment, f"looking at batch {batch_id}") from None
    finally:
        api.close()
    return _write(opts, session, store, job, deployment, source, results)


# -- collecting ---------------------------------------------------------------------------


def _poll(
    api: BatchApi, job: KeptJob, opts: BatchOptions, session: Session
) -> list[Snapshot] | None:
    """Each of the job's batches once all are over, in order; None when one still runs
    and we stop looking (said why). One that is over is not looked at again."""
    from cli.terminal.job_view import JobView, job_line
    from gateway.providers.batchapi.parts import combined

    last: dict[int, Snapshot] = {}
    with JobView(session.diag) as view:
        while True:
            for part, batch_id in enumerate(job.batches):
                if part not in last or not last[part].state.over:
                    last[part] = api.look(batch_id)
            snaps = [last[part] for part in range(len(job.batches))]
            snap = combined(job.batch_id, snaps)
            view.show(snap)  # the bar sums the batches' counts
            if snap.state.over:
                break
            if opts.poll_every <= 0:
                session.diag.notice(job_line(snap) + "; still running: look again later (exit 75)")
                return None
            session.clock.sleep(opts.poll_every)
    for each in snaps:
        if each.detail:
            session.diag.warn(f"batch {each.id} {each.status}: {each.detail}")
    return snaps


def _write(
    opts: BatchOptions,
    session: Session,
    state: StateStore,
    job: KeptJob,
    deployment: Deployment,
    source: str,
    results: dict[str, ItemResult],
) -> int:
    from cli.commands.batch_ask import JsonRecords
    from cli.commands.batch_options import output
    from gateway.batch import BadLine, Question, RecordWriter, prepare, read_items
    from gateway.batch.jobs import AnsweredVia

    _prepare_centre(session)
    done = (
        prepare(opts.out, warn=session.diag.warn).done if opts.resume and opts.out else frozenset()
    )
    engine = None if opts.no_fallback else session.engine(store=state)
    asker = _asker(session, log=True, engine=engine)
    # By line: ids may repeat in an input. A line whose id is not the one sent (the file
    # was edited since) was not sent, whatever its place, and is asked through the engine.
    sent = {item.line: item for item in job.items}
    records = JsonRecords(state, session.config, session.environ)
    counts = dict.fromkeys(AnsweredVia, 0)
    redactor = session.redactor
    with open(source, "rb") as f, output(opts.out, append=opts.resume) as out:
        writer = RecordWriter(out, scrub=redactor.scrub if redactor else None)
        for item in read_items(f, opts.format):
            if isinstance(item, BadLine):
                writer.write({"id": item.id, "line": item.line, **records.bad_line(item)})
                asker.earned(ExitCode.DATAERR)
                continue
            assert isinstance(item, Question)
            if item.id in done:
                continue
            prepared = asker.prepare(item)
            kept = sent.get(item.line)
            got = results.get(kept.custom_id) if kept is not None and kept.id == item.id else None
            batch_id = job.batches[kept.part] if kept is not None else job.batch_id
            via, shown = _answer(asker, prepared, deployment, batch_id, got, opts.no_fallback)
            counts[via] += 1
            record = {"id": item.id, "line": item.line, **records.result(item, shown)}
            writer.write({**record, "answered_via": str(via)})
        writer.close()
    if engine is not None:
        engine.close()
    session.diag.notice(
        f"batch {job.batch_id}: {counts[AnsweredVia.BATCH]} by the batch, "
        f"{counts[AnsweredVia.ENGINE]} asked again through the engine, "
        f"{counts[AnsweredVia.NOT_ASKED]} handed off unasked"
    )
    return asker.worst()


def _answer(
    asker: Asker,
    prepared: Prepared,
    deployment: Deployment,
    batch_id: str,
    item: ItemResult | None,
    no_fallback: bool,
) -> tuple[AnsweredVia, Result]:
    from gateway.batch.jobs import AnsweredVia, batch_result, failed_result

    if prepared.handed is not None:
        return AnsweredVia.NOT_ASKED, asker.finish(prepared, prepared.handed, settle=False)
    request = _request_for(prepared, deployment)
    if item is not None and request is not None:
        result = batch_result(item, request, deployment, batch_id=batch_id)
        if result is not None:
            return AnsweredVia.BATCH, asker.finish(prepared, result)
    if no_fallback:
        failed = failed_result(item, request or prepared.request, deployment, batch_id=batch_id)
        return AnsweredVia.BATCH, asker.finish(prepared, failed, settle=False)
    return AnsweredVia.ENGINE, asker.ask_prepared(prepared)


# -- what sending and collecting share -------------------------------------------------------


def _request_for(prepared: Prepared, deployment: Deployment) -> Request | None:
    """The request sent for `prepared` to `deployment`: its own, or fewer passages when it
    does not fit the window (as the engine compacts it); None: not sent (handed off
    unasked, or too large even so: the engine says so when it is collected)."""
    from gateway.tokens import estimate

    if prepared.handed is not None:
        return None
    request = prepared.request
    room = deployment.context_window - request.max_output_tokens
    if estimate(request.text) <= room:
        return request
    return prepared.prompts.within(room)


def _first(config: Config) -> Deployment:
    if not config.deployments:
        raise CliError("the config has no deployments", ExitCode.CONFIG)
    return config.deployments[0]


def _api(session: Session, deployment: Deployment) -> BatchApi:
    from cli.runtime import wiring

    return wiring.build_batch_api(deployment, session.environ)


def _latest(jobs: JobStore, source: str) -> KeptJob | None:
    from gateway.batch.jobs import UnreadableJob

    try:
        return jobs.latest(source)
    except UnreadableJob:
        return None


def _prepare_centre(session: Session) -> None:
    from cli.runtime import wiring

    wiring.request_for(session.config, "-", None, budget=None, product=session.opts.product)
    session.warn_about_articles()
    session.open_help_centre()


def _asker(session: Session, *, log: bool, engine: Engine | None = None) -> Asker:
    from cli.commands.batch_ask import Asker
    from cli.runtime.wiring import forced_language
    from gateway.knowledge.shared import Shared

    def ask(request: Request, prompts: Compactor) -> Result:
        assert engine is not None, "asked through the engine with --no-fallback"
        return engine.ask(request, compact=prompts)

    index = session.index
    return Asker(
        session,
        None if index is None else Shared(index),
        ask,
        session.open_log() if log else None,
        language=forced_language(session.opts.language),
    )


def _provider_error() -> type[ProviderError]:
    from gateway.model import ProviderError

    return ProviderError


def _failed(exc: ProviderError, deployment: Deployment, doing: str) -> CliError:
    from gateway.model import ErrorKind

    kind = exc.failure.kind
    if kind in (ErrorKind.AUTH, ErrorKind.QUOTA):
        code, fix = ExitCode.CONFIG, f"check {deployment.name}'s key and its account"
    elif kind in (ErrorKind.BAD_REQUEST, ErrorKind.MODEL_NOT_FOUND):
        code, fix = ExitCode.DATAERR, f"check {deployment.name}'s model and base_url"
    else:
        code, fix = ExitCode.TEMPFAIL, "run the same command again later"
    return CliError(
        f"{deployment.name}'s Batch API failed {doing} ({kind}): {exc.failure.detail}",
        code,
        fix=fix,
    )
