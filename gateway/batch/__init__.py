"""`support-ask batch`: many questions through one engine, concurrent, resumable.

One module per concern: `source` (the input, line by line), `resume` (what an earlier run
answered, and repairing its torn tail), `limiter` (how many in flight, when to start the
next), `writer` (whole lines), `progress` (the counts), `runner` (the threads). Nothing
here draws on a terminal: the CLI renders `Progress` snapshots.

The names below are imported when first used, so that `batch --help`, which needs only
the input's `Format`, does not import the runner's threads and queues.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.batch.limiter import Limiter, LimiterState
    from gateway.batch.progress import Progress
    from gateway.batch.resume import Resumed, prepare
    from gateway.batch.runner import BatchRunner, InputError, Records
    from gateway.batch.source import BadLine, Format, Item, ItemId, Question, read_items
    from gateway.batch.writer import RecordWriter

_LAZY = {
    "BadLine": "source",
    "BatchRunner": "runner",
    "Format": "source",
    "InputError": "runner",
    "Item": "source",
    "ItemId": "source",
    "Limiter": "limiter",
    "LimiterState": "limiter",
    "Progress": "progress",
    "Question": "source",
    "RecordWriter": "writer",
    "Records": "runner",
    "Resumed": "resume",
    "prepare": "resume",
    "read_items": "source",
}

__all__ = [
    "BadLine",
    "BatchRunner",
    "Format",
    "InputError",
    "Item",
    "ItemId",
    "Limiter",
    "LimiterState",
    "Progress",
    "Question",
    "RecordWriter",
    "Records",
    "Resumed",
    "prepare",
    "read_items",
]

if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # found once; later lookups do not come here
        return value
