"""A provider batch job as kept in the state: enough to poll it and to write its records
from any machine, and nothing a customer wrote (the questions stay in the input file,
which the records are rebuilt from)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gateway.batch.source import ItemId
from gateway.model import ProviderKind

VERSION = 1


@dataclass(frozen=True)
class JobItem:
    """One question sent: its id and line in the input, the custom id the provider echoes."""

    custom_id: str
    id: ItemId
    line: int


@dataclass(frozen=True)
class KeptJob:
    """`batch_id` at `provider` through `deployment`, sent from `input` (an absolute path)
    at `submitted_at` (epoch seconds); `items` in the order sent. `articles` (absolute
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
            "items": [[i.custom_id, i.id, i.line] for i in self.items],
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
        if data.get("version") != VERSION:
            raise ValueError(f"kept by another version of support-ask ({data.get('version')!r})")
        items = tuple(
            JobItem(str(custom_id), item_id, int(line))
            for custom_id, item_id, line in data["items"]
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
        )
