"""A provider batch job as kept in the state: enough to poll it and to write its records
from any machine, and nothing a customer wrote (the questions stay in the input file,
which the records are rebuilt from)."""

from __future__ import annotations

import json

from gateway.batch.source import ItemId
from gateway.model import ProviderKind
from gateway.record import record

VERSION = 2
_READS = (1, 2)  # a job kept by the version before the parts is one part


@record
class JobItem:
    """One question sent: its id and line in the input, the custom id the provider echoes,
    and which of the job's parts (provider batches) it went in."""

    custom_id: str
    id: ItemId
    line: int
    part: int = 0


@record
class KeptJob:
    """The job `batch_id` at `provider` through `deployment`, sent from `input` (an
    absolute path) at `submitted_at` (epoch seconds); `items` in the order sent. `parts`:
    the provider's batch ids, in order, when a backlog past one batch's caps went as
    several (empty: one, `batch_id` itself, the provider's). `articles` (absolute
    paths), `max_article_tokens`, `product` and `language`: the options the questions
    were prepared with, so that collecting prepares them the same way."""

    batch_id: str
    provider: ProviderKind
    deployment: str
    input: str
    submitted_at: float
    items: tuple[JobItem, ...]
    articles: tuple[str, ...] = ()
    max_article_tokens: str | None = None
    product: str | None = None
    language: str | None = None
    parts: tuple[str, ...] = ()

    @property
    def batches(self) -> tuple[str, ...]:
        """The provider's batch ids of this job, in order."""
        return self.parts or (self.batch_id,)

    def sent_in(self, part: int) -> list[str]:
        """The custom ids sent in the `part`-th batch, in the order sent."""
        return [i.custom_id for i in self.items if i.part == part]

    def by_custom_id(self) -> dict[str, JobItem]:
        return {item.custom_id: item for item in self.items}

    def to_json(self) -> bytes:
        data = {
            "version": VERSION,
            "batch_id": self.batch_id,
            "provider": str(self.provider),
            "deployment": self.deployment,
            "input": self.input,
            "submitted_at": self.submitted_at,
            "items": [[i.custom_id, i.id, i.line, i.part] for i in self.items],
            "parts": list(self.parts),
            "sent_with": {
                "articles": list(self.articles),
                "max_article_tokens": self.max_article_tokens,
                "product": self.product,
                "language": self.language,
            },
        }
        return json.dumps(data, separators=(",", ":")).encode()

    @staticmethod
    def from_json(raw: bytes | str) -> KeptJob:
        """Raises ValueError (or KeyError, TypeError) for anything that is not a kept job."""
        data = json.loads(raw)
        if data.get("version") not in _READS:
            raise ValueError(f"kept by another version of support-ask ({data.get('version')!r})")
        items = tuple(
            JobItem(str(custom_id), item_id, int(line), int(part[0]) if part else 0)
            for custom_id, item_id, line, *part in data["items"]
        )
        options = data.get("sent_with") or {}
        return KeptJob(
            articles=tuple(str(p) for p in options.get("articles") or ()),
            max_article_tokens=options.get("max_article_tokens"),
            product=options.get("product"),
            language=options.get("language"),
            batch_id=str(data["batch_id"]),
            provider=ProviderKind(data["provider"]),
            deployment=str(data["deployment"]),
            input=str(data["input"]),
            submitted_at=float(data["submitted_at"]),
            items=items,
            parts=tuple(str(b) for b in data.get("parts") or ()),
        )
