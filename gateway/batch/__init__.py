"""`support-ask batch`: many questions through one engine, concurrent, resumable.

One module per concern: `source` (the input, line by line), `resume` (what an earlier run
answered, and repairing its torn tail), `limiter` (how many in flight, when to start the
next), `writer` (whole lines), `progress` (the counts), `runner` (the threads). Nothing
here draws on a terminal: the CLI renders `Progress` snapshots.
"""

from gateway.batch.limiter import Limiter, LimiterState
from gateway.batch.progress import Progress
from gateway.batch.resume import Resumed, prepare
from gateway.batch.runner import BatchRunner, InputError, Records
from gateway.batch.source import BadLine, Format, Item, ItemId, Question, read_items
from gateway.batch.writer import RecordWriter

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
