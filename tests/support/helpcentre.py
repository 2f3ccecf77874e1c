"""Generated help centres for the knowledge tests: many pages of seeded filler, sections
under headings, and whatever pages a test adds to find among them."""

from __future__ import annotations

import os
import random
from pathlib import Path

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "da", "zu", "ri", "mo")


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))


def filler(rng: random.Random, words: int) -> str:
    out: list[str] = []
    count = 0
    while count < words:
        sentence = [_word(rng) for _ in range(rng.randint(6, 14))]
        out.append(" ".join(sentence).capitalize() + ".")
        count += len(sentence)
    return " ".join(out)


def html_page(rng: random.Random, title: str, sections: int = 6, words: int = 180) -> str:
    body = "".join(
        f"<h2>{_word(rng).capitalize()} {_word(rng)}</h2>\n<p>{filler(rng, words)}</p>\n"
        f"<p>{filler(rng, words // 2)}</p>\n"
        for _ in range(sections)
    )
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>\n{body}</body></html>"


def age(path: Path, text: str | None = None, seconds: float = 60.0) -> Path:
    """Write `text` (if given) to `path`, then set its mtime `seconds` back. An index reads
    a file edited just now again (it could change again within the same timestamp tick);
    the tests mean a settled one."""
    if text is not None:
        path.write_text(text)
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - int(seconds * 1e9)))
    return path


def write_centre(root: Path, pages: int, *, seed: int = 1, sections: int = 6) -> list[Path]:
    """`pages` HTML pages of filler in nested folders under `root`; their paths."""
    rng = random.Random(seed)
    paths = []
    for number in range(pages):
        path = root / f"part{number % 7}" / f"page-{number:05d}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html_page(rng, f"{_word(rng).capitalize()} guide {number}", sections))
        paths.append(age(path))
    return paths


REFUNDS = (
    "# Refunds\n\n## Asking for a refund\n\nWrite to billing within 30 days of the charge "
    "and the refund reaches your card in a week.\n"
)
INVOICES = "# Invoices\n\n## Downloading an invoice\n\nOpen Billing and click Download PDF.\n"


def write_billing_centre(root: Path) -> Path:
    """40 filler pages and two billing articles that golden questions can name by path
    (billing/refunds.md, billing/invoices.md): large enough to be ranked; `root`."""
    write_centre(root, 40)
    (root / "billing").mkdir()
    age(root / "billing" / "refunds.md", REFUNDS)
    age(root / "billing" / "invoices.md", INVOICES)
    return root
