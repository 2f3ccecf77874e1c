"""What `batch` is asked to do (`BatchOptions`, the command line's choices once parsed),
and where its records go (`output`): shared by the command and its provider batch."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from cli.runtime.options import AskOptions
from gateway.batch.source import Format
from gateway.record import field, record

STDIN = "-"
DEFAULT_CONCURRENCY = 4
DEFAULT_EVERY_S = 10.0
DEFAULT_POLL_S = 60.0


@record
class BatchOptions:
    source: str | None  # a path, or "-" for stdin; None: --status's job names it
    ask: AskOptions = field(default_factory=AskOptions)  # the options shared with `ask`
    out: Path | None = None
    resume: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    format: Format = Format.AUTO
    every: float = DEFAULT_EVERY_S
    quiet: bool = False
    provider_batch: bool = False  # through the first deployment's provider Batch API
    status: str | None = None  # a provider batch job's id: poll it and write its records
    no_fallback: bool = False  # a provider batch's failed requests are not asked again
    poll_every: float = DEFAULT_POLL_S


@contextmanager
def output(path: Path | None, *, append: bool) -> Iterator[BinaryIO]:
    if path is None:
        yield sys.stdout.buffer
        return
    try:
        # Unbuffered: each record reaches the file with its own write.
        f = open(path, "ab" if append else "wb", buffering=0)  # noqa: SIM115
    except OSError as exc:
        raise CliError(
            f"cannot write {path}: {exc.strerror or exc}",
            ExitCode.IO_ERROR,
            fix="pick an --out in a folder you can write to",
        ) from None
    with f:
        yield f
