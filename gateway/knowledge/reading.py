"""Reading the files a refresh stores: each one to the rows the index keeps of it, in this
process or, for a first index of many files, in a pool of processes.

A file's rows (`Prepared`: its article, its passages, their terms and sizes) depend on
the file alone, so they are made wherever there is a free core and stored by the one
process that holds the index's transaction (`store`), in the order the files were found.
Reading is most of a first index's time (parsing HTML, cutting passages, stemming), the
inserts little: on two cores the pool takes about half the time.

The pool is used only when it pays: at least `POOL_FILES` files and `POOL_BYTES` bytes to
read (a help centre read this run, or a refresh of a few edited files, never starts
one), more than one core this process may run on, and a platform that forks. Its
workers are forked by a fork server that imports only the reader: they start in
milliseconds once it runs (about a tenth of a second, once), they hold none of this
process's memory, and no thread of this process is forked mid-lock. At most `WINDOW`
batches per worker are in flight, so the parent never holds more than a few pages' rows
however large the set. A worker or the server killed breaks the pool, and the files left
are read in this process (`_pooled`); this process killed, its workers end with it
(`_end_with`), and the server and the resource tracker with them.

HTML is read with lxml when there are many pages and it can be imported (`htmltext`),
else with the standard library's parser (if lxml is missing, with one warning,
`Reading.warning`, that says how to bring it back).
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from gateway.knowledge.files import HTML_SUFFIXES
from gateway.knowledge.htmltext import (
    ParserMissing,
    Reader,
    lxml_etree,
    lxml_found,
    standard,
    with_lxml,
)
from gateway.knowledge.load import read
from gateway.knowledge.passages import split
from gateway.knowledge.terms import terms
from gateway.model import Article
from gateway.record import record
from gateway.tokens import estimate

if TYPE_CHECKING:
    from gateway.knowledge.files import Found
    from gateway.knowledge.store import Warn

# lxml's import (~30 ms) is paid back by about 20 pages read faster.
LXML_PAGES = 20
POOL_FILES = 64
POOL_BYTES = 2_000_000
BATCH = 8  # files a worker reads per task: fewer round trips, still a smooth progress bar
WINDOW = 2  # batches in flight per worker


PassageRow = tuple[int, str, int | None, int | None, int, int, int, bool, int]
"""A passage as the `passages` table holds it, but for its ids: its number, heading, the
heading line's span (start, end; None, None: no heading), the body's start and end in the
article's text, its words, whether it is its section's first, its body's estimated
tokens. A plain tuple: a pool's workers send thousands of them to the one process that
inserts them, which pickles, unpickles and inserts a tuple cheapest."""
TermsRow = tuple[str, str]
"""A passage's terms, space-separated, as the full-text table holds them: heading, body."""


@record
class Prepared:
    """One file read: its article and the rows of its passages, or why it is unusable."""

    path: str
    article: Article | None
    problem: str
    words: int = 0
    tokens: int = 0
    title_terms: str = ""
    passages: tuple[PassageRow, ...] = ()
    terms: tuple[TermsRow, ...] = ()  # one per passage, in the same order


def prepare(path: str, html: Reader | None = None) -> Prepared:
    """The rows of the file at `path` (`html`: how an HTML page is read, see `load.read`)."""
    article, problem = read(path, html)
    if article is None:
        return Prepared(path, None, problem)
    text = article.text
    rows: list[PassageRow] = []
    counted: list[TermsRow] = []
    for passage in split(article):
        body = text[passage.start : passage.end]
        span = passage.heading_span
        if span is None:
            hstart, hend, heading = None, None, ""
        else:
            hstart, hend = span
            heading = text[hstart:hend]
        rows.append(
            (
                passage.number,
                passage.heading,
                hstart,
                hend,
                passage.start,
                passage.end,
                passage.words,
                passage.first,
                estimate(body),
            )
        )
        counted.append((" ".join(terms(heading)), " ".join(terms(body))))
    return Prepared(
        path,
        article,
        "",
        len(text.split()),
        estimate(text),
        " ".join(terms(article.title)),
        tuple(rows),
        tuple(counted),
    )


@record
class Reading:
    """How a refresh reads its files: the HTML reader, and the warning when it is not
    the fast one."""

    html: Reader
    warning: str | None = None
    workers: int | None = None  # processes to read in; None: decided by the files (`_workers`)

    @classmethod
    def of(cls, files: Sequence[Found]) -> Reading:
        """How to read `files`: with lxml when they hold at least `LXML_PAGES` HTML pages
        and it imports (else the standard library's parser, with a warning), with the
        standard library's parser for fewer (an edited page or two: html.parser imports
        in a fifth of lxml's time, and both read a page to the same text); in a pool
        when it pays (`_workers`)."""
        workers = _workers(files)
        pages = sum(os.path.splitext(f.path)[1].lower() in HTML_SUFFIXES for f in files)
        if pages < LXML_PAGES:
            return cls(standard, workers=workers)
        try:
            # Only the workers read pages in a pool: this process need not load lxml.
            lxml_found() if workers > 1 else lxml_etree()
        except ParserMissing as exc:
            warning = f"{exc}; reading HTML with the standard library's parser"
            return cls(standard, warning, workers)
        return cls(with_lxml, workers=workers)

    def each(self, files: Sequence[Found], warn: Warn | None = None) -> Iterator[Prepared]:
        """Every file's rows, in the order of `files` (`warn`: told when a pool's worker
        ended abruptly and the rest were read in this process, `_pooled`)."""
        workers = _workers(files) if self.workers is None else self.workers
        if workers < 2:
            for file in files:
                yield prepare(file.path, self.html)
            return
        yield from _pooled([f.path for f in files], self.html, workers, warn)


def _workers(files: Sequence[Found]) -> int:
    """How many processes to read `files` in: 1 (this one) unless a pool pays and is safe."""
    if len(files) < POOL_FILES or sum(f.size for f in files) < POOL_BYTES:
        return 1
    if not hasattr(os, "fork"):  # no fork server where processes cannot fork
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: every core the machine has
        cores = os.cpu_count() or 1
    return min(cores, 8)


def _context() -> Any:
    """The pool's processes' start method: forked by a fork server that imported only the
    reader (and lxml), not from this process, so their memory is the reader's, not this
    process's (a CLI's modules, the index's cache), and the first index's peak RSS does
    not grow by a copy of it."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "lxml.etree"])
    return context


def start_early(files: Sequence[Found]) -> None:
    """Start the fork server now when `files` will be read in a pool (a first index of a
    large set): it imports the reader while this process creates the index, instead of
    after (its start, about a tenth of a second, is otherwise time one core idles)."""
    if _workers(files) > 1:
        _serving()


def _serving() -> Any:
    """The pool's context, its fork server running: started, if it is not, with the stop
    signals (gateway.clock.STOPS) blocked, which the server and the workers it forks
    inherit and keep. A terminal's Ctrl-C, `timeout`'s SIGTERM and a closed terminal's
    SIGHUP reach the whole process group. A Ctrl-C taken by the server while it imported
    the reader, or by a worker (Python's KeyboardInterrupt), printed a traceback, and a
    worker it ended while it held a queue's lock left the others waiting on that lock and
    the index's stop on them for ever; a TERM or HUP that ended a worker while it sent its
    batch left half a message in the pipe, which the pool's manager thread waited for the
    rest of, for ever. This process alone stops the pool on any of them (`_pooled`): the
    batches being read are finished, the workers end, the server ends with this process.
    (A process of the pool still ends on SIGKILL, and the reading goes on without the
    pool: `_pooled`.)"""
    import signal
    from multiprocessing import forkserver, resource_tracker

    from gateway.clock import stops_blocked

    context = _context()
    # The resource tracker ignores SIGINT and SIGTERM itself, and unblocks both (here too,
    # around its spawn, whatever the mask was before); SIGHUP ended it, and the one the
    # server then started afresh printed a KeyError traceback for a lock it never knew.
    # So it starts first, with SIGHUP blocked, which it keeps; then the server.
    with stops_blocked(frozenset({signal.SIGHUP})):
        resource_tracker.ensure_running()
    with stops_blocked():
        forkserver.ensure_running()
    return context


def _end_with(index: int) -> None:
    """The pool's initializer, in each worker: end it when the index's process `index` ends,
    however that ends. Killed (`kill -9`, `timeout -s KILL`, the OOM killer, which picks
    the largest process of a first index: this one), it left its workers for ever: each
    blocked sending a result into a pipe that no one reads, and holding the fork server's
    pipe of the living (so the server, and the resource tracker, waited on them)."""
    import threading

    threading.Thread(target=_watch, args=(index,), name="end-with-index", daemon=True).start()


def _watch(index: int) -> None:
    import select

    try:
        ended = os.pidfd_open(index)  # readable once `index` has ended (Linux 5.3)
    except ProcessLookupError:  # ended already
        pass
    except (AttributeError, OSError):  # no pidfd here: looked at each second
        import time

        # None by that id, or another user's (an id taken again): ours has ended.
        with contextlib.suppress(OSError):
            while True:
                time.sleep(1.0)
                os.kill(index, 0)
    else:
        select.select([ended], [], [])
    os._exit(1)


def _read_batch(paths: Sequence[str], html: Reader) -> list[Prepared]:
    try:
        return [prepare(path, html) for path in paths]
    except ParserMissing:  # installed, yet not importable here: the same text, slower
        return [prepare(path, standard) for path in paths]


# Said when a worker of the pool ended abruptly (`_pooled`).
WORKER_ENDED = (
    "a process reading the help centre ended abruptly (killed, or out of memory); "
    "the rest was read in this process, with the standard library's parser"
)


def _pooled(
    paths: Sequence[str], html: Reader, workers: int, warn: Warn | None
) -> Iterator[Prepared]:
    """`paths`' rows, read in a pool, in their order. A worker that ends abruptly (the
    kernel's OOM killer, a `kill -9`, a crash in the parser) breaks the pool: the files
    not yet read are read here instead, with `standard` (were a page the cause, html.parser
    reads it in Python, where libxml2 may have crashed), and `warn` is told."""
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    reads = _pool_reads(paths, html, workers)
    try:
        for prepared in reads:
            done += 1
            yield prepared
    except BrokenProcessPool:
        if warn is not None:
            warn(WORKER_ENDED)
        for path in paths[done:]:
            yield prepare(path, standard)
    finally:
        reads.close()  # stopped early (an error, a stop): the pool shut down now, not later


def _pool_reads(
    paths: Sequence[str], html: Reader, workers: int
) -> Generator[Prepared, None, None]:
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from gateway.clock import stops_blocked

    batches = [paths[i : i + BATCH] for i in range(0, len(paths), BATCH)]
    # Started before any submit: the server would inherit the mask `stops_blocked` sets
    # there, and its workers with it (they are forked from it, not from this process).
    context = _serving()
    pending: deque[Future[list[Prepared]]] = deque()
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_end_with, initargs=(os.getpid(),)
    )
    try:
        for batch in batches:
            # The first submit starts the pool's manager thread (and it the queue's
            # feeder): they must not take a stop signal (gateway.clock).
            # The first `workers` start a process through the fork server: a stop taken
            # between its connect and its message, which the server reads as an EOF,
            # would end the server with a traceback on stderr. A stop that comes in a
            # submit waits for its end.
            with stops_blocked():
                pending.append(pool.submit(_read_batch, batch, html))
            if len(pending) >= workers * WINDOW:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    except BrokenProcessPool:
        # The pool's manager thread ends the other workers with SIGTERM, which they block
        # (`_serving`), then waits for them to end: for ever, as one waits on a queue's
        # lock that the ended worker held. This process's children that are alive now
        # are the pool's workers (the fork server and the resource tracker are not its
        # `multiprocessing` children): killed, they release it.
        import multiprocessing

        for worker in multiprocessing.active_children():
            worker.kill()
        raise
    finally:
        # The caller stopped early (an error, a stop) or not: the batches not yet started
        # are cancelled by the pool's manager thread, not here. It completes the futures
        # it holds, and one it found cancelled under it (this thread's cancel while it
        # marked them failed: a worker ended by the TERM or HUP sent to the group) was
        # an InvalidStateError traceback from that thread. The batches being read are
        # waited for (a few pages each), then the workers end.
        pool.shutdown(wait=True, cancel_futures=True)
