"""5. Article loading and token counting for 1 MB and 10 MB of generated articles.

The articles are many Markdown files (about 4 KB each, in nested folders, some with front
matter) of seeded pseudo-English help-centre prose, written to the scratch folder. Each
repetition times, interleaved with its floor:

- `load_articles` against walking the folder and reading and decoding every file;
- `count_tokens` on the rendered prompt against tiktoken's `encode_ordinary` on one thread;
- the whole path a question takes with these articles (load, render, count).

Loading the tokenizer happens once per process, so it is timed in fresh processes and
added to the whole path for the target (10 MB in under one second).
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "5 articles+tokens"
TARGET = Target.at_most(Measure.MEDIAN, 1.0, "< 1 s for 10 MB")
ARTICLE_BYTES = 4000

_VOCABULARY = """
account admin allow api app archive attach backup billing browser cache cancel card
change channel check click cloud code confirm connect contact copy create credit
customer dashboard data default delete device disable domain download edit email
enable error export file filter folder free green guest help history import install
invite invoice key language limit link list log login manage member menu message
mobile month name network new notification open option order owner page password
payment permission phone plan policy profile project receipt refund region remove
renew report request reset restore role save search security select send server
setting share sign single storage subscription support switch sync team template
token trial update upgrade upload user verify view wait web workspace year
the a an to of and or in on for with from your you we it is are can will not if
when then this that each every after before within about more than only also
"""
WORDS = tuple(_VOCABULARY.split())


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
    if rng.random() < 0.15:
        words.insert(rng.randint(0, len(words)), f"{rng.randint(2, 500)}")
    if rng.random() < 0.08:
        words.append(f"(see https://help.example.com/{rng.choice(WORDS)}-{rng.randint(1, 99)})")
    return " ".join(words).capitalize() + "."


def _article(rng: random.Random, index: int) -> str:
    title = " ".join(rng.choice(WORDS) for _ in range(4)).capitalize()
    parts = []
    if index % 3 == 0:
        parts.append(f"---\ntitle: {title}\nid: {index}\n---\n")
    parts.append(f"# {title}\n")
    size = sum(len(p) for p in parts)
    while size < ARTICLE_BYTES:
        if rng.random() < 0.2:
            block = "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 5)))
        elif rng.random() < 0.1:
            block = f"## {_sentence(rng)[:-1]}"
        else:
            block = " ".join(_sentence(rng) for _ in range(rng.randint(2, 6)))
        parts.append(block + "\n")
        size += len(block) + 1
    return "\n".join(parts)


def write_articles(root: Path, total: int, seed: int = 7) -> int:
    """Markdown files under `root` adding up to about `total` bytes; returns the count."""
    rng = random.Random(seed)
    written = count = 0
    while written < total:
        folder = root / f"section-{count % 25:02d}" / f"topic-{count % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        data = _article(rng, count).encode()
        (folder / f"article-{count:05d}.md").write_bytes(data)
        written += len(data)
        count += 1
    return count


def _raw_read(root: Path) -> int:
    size = 0
    for path in sorted(root.rglob("*.md")):
        size += len(path.read_bytes().decode("utf-8"))
    return size


def _tokenizer_load(ctx: Context) -> Summary:
    code = (
        "import time; t = time.perf_counter()\n"
        "from gateway.tokens import count_tokens; count_tokens('warm up')\n"
        "print(time.perf_counter() - t)"
    )
    times = []
    for i in range(1 + (1 if ctx.smoke else 5)):
        out = subprocess.run(
            [ctx.python, "-c", code], capture_output=True, text=True, check=True, cwd=ctx.scratch
        )
        if i:  # the first run warms the page cache
            times.append(float(out.stdout))
    return Summary.of(times)


def _size_name(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def run(ctx: Context) -> list[Row]:
    import tiktoken

    from gateway.knowledge.load import load_articles
    from gateway.tokens import ENCODING, count_tokens
    from prompts import load_prompt, render

    load = _tokenizer_load(ctx)
    rows = [Row(GROUP, "tokenizer load, fresh process", Unit.MILLIS, load)]
    count_tokens("warm up")  # this process's copy, so the rows below time the counting
    encoding: Any = tiktoken.get_encoding(ENCODING)
    template = load_prompt(None)
    for size in ctx.sizes.article_sizes:
        root = ctx.folder(f"articles-{size}")
        files = write_articles(root, size)
        times: dict[str, list[float]] = {k: [] for k in ("load", "raw", "count", "encode", "path")}
        counts = set()
        for rep in range(ctx.sizes.article_reps + 1):
            t0 = time.perf_counter()
            articles, warnings = load_articles([root])
            t1 = time.perf_counter()
            system = render(template, product="Acme Cloud", articles=articles)
            t2 = time.perf_counter()
            counts.add(count_tokens(system))
            t3 = time.perf_counter()
            if warnings or len(articles) != files:
                raise AssertionError(f"load_articles read {len(articles)} of {files}: {warnings}")
            t4 = time.perf_counter()
            _raw_read(root)
            t5 = time.perf_counter()
            counts.add(len(encoding.encode_ordinary(system)))
            t6 = time.perf_counter()
            if rep == 0:
                continue  # warm-up: page cache, regex caches
            times["load"].append(t1 - t0)
            times["count"].append(t3 - t2)
            times["path"].append(t3 - t0)
            times["raw"].append(t5 - t4)
            times["encode"].append(t6 - t5)
        if len(counts) != 1:
            raise AssertionError(f"count_tokens disagrees with tiktoken: {sorted(counts)}")
        s = {k: Summary.of(v) for k, v in times.items()}
        label = _size_name(size)
        whole = Summary.of([t + load.median for t in times["path"]])
        rows += [
            Row(GROUP, f"load_articles {label} ({files} files)", Unit.MILLIS, s["load"],
                s["raw"], "walk + read + decode"),
            Row(GROUP, f"count_tokens {label} ({counts.pop():,} tokens)", Unit.MILLIS,
                s["count"], s["encode"], "tiktoken encode_ordinary, 1 thread"),
            Row(GROUP, f"{label}: load + render + count + tokenizer load", Unit.MILLIS, whole,
                target=TARGET if size >= 10_000_000 else None),
        ]  # fmt: skip
    return rows


if __name__ == "__main__":
    write_articles(Path(sys.argv[1]), int(sys.argv[2]))
