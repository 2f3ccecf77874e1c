"""`--resume`: which ids an earlier run already answered, read from its output file.

Every line the writer puts in the file is a whole JSON object written with one call, so
after Ctrl-C or SIGTERM the file ends on a newline. A hard kill (SIGKILL, a power cut) can
still leave the last line cut short; `prepare` cuts that torn tail off before the file is
appended to, so the repaired file is JSON Lines again and the torn line's question is
simply asked again. A line in the middle that is not a JSON object (edited by hand) is
ignored with a warning, never fatal.

Only the ids are kept (a set of small strings and integers), never the records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from gateway.batch.source import ItemId
from gateway.record import record

# A question whose record says one of these got its final reply: asked again, it would
# be paid for twice. Anything else (failed, fatal, a bad input line) is asked again.
DONE_STATUSES = frozenset({"answered", "refused"})
_TAIL_CHUNK = 64 * 1024

Warn = Callable[[str], None]


@record
class Resumed:
    done: frozenset[ItemId]
    records: int  # complete lines read
    torn: bool  # a cut-short last line was removed
    ignored: int  # lines in the middle that were not JSON objects


def prepare(path: Path, *, warn: Warn) -> Resumed:
    """Repair `path`'s torn tail, if any, and return the ids it holds as answered. A file
    that does not exist yet is an empty run."""
    try:
        torn = _cut_torn_tail(path)
    except FileNotFoundError:
        return Resumed(frozenset(), 0, False, 0)
    if torn:
        warn(
            f"the last line of {path} was cut short (the run was killed hard); "
            "it was removed and its question will be asked again"
        )
    done: set[ItemId] = set()
    records = ignored = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                ignored += 1
                warn(f"{path}:{number}: not a JSON object; ignored")
                continue
            records += 1
            ident = doc.get("id")
            if doc.get("status") in DONE_STATUSES and _is_id(ident):
                done.add(ident)
    return Resumed(frozenset(done), records, torn, ignored)


def _is_id(value: object) -> TypeGuard[ItemId]:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _cut_torn_tail(path: Path) -> bool:
    """Truncate `path` after its last newline; True when there was something to cut."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return False
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return False
        end = size
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            f.seek(start)
            chunk = f.read(end - start)
            at = chunk.rfind(b"\n")
            if at >= 0:
                f.truncate(start + at + 1)
                return True
            end = start
        f.truncate(0)  # one torn line and nothing else
        return True
