"""19. HTML parsers for a first index: html.parser, lxml and selectolax, on the same pages.

Each parser feeds the one sink that turns a page into an article (gateway.knowledge.
htmltext): html.parser and lxml as the tool does; selectolax (lexbor) by walking the tree
it builds, as it only builds one (its reader is here, the tool has none). Over git's and
PostgreSQL's manuals (smoke: a generated set and examples/kb's HTML pages):

- the text: pages whose passages (headings and bodies, whitespace aside), title, kind or
  link differ from html.parser's: the target is none, for the parser the tool uses;
- speed: reading every page to an article in a fresh process, CPU seconds of the reading
  alone, interleaved, as a ratio to html.parser's;
- peak RSS of that process, against html.parser's;
- the import, in a fresh process, against `import html.parser`; and the size of what the
  package installs (its wheel's files).

selectolax is installed by bench/setup (a benchmark dependency only); without it its rows
say so.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.docsets import EXAMPLES_KB, GIT_DOC, HTML, PG_DOC, ROOT, pages, write_html_set
from bench.procs import Command, RunFailed, child_env, interleave
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "17 HTML parsers"
SAME_TARGET = Target.at_most(Measure.TOTAL, 0, "no page differs")
PARSERS = ("html.parser", "lxml", "selectolax")


def lexbor(text: str) -> Any:
    """A page read by selectolax's lexbor tree, walked into the tool's sink."""
    from selectolax.lexbor import LexborHTMLParser

    from gateway.knowledge.htmltext import _read

    def feed(text: str, sink: Any) -> None:
        def walk(node: Any) -> None:
            for child in node.iter(include_text=True):
                tag = child.tag
                if tag == "-text":
                    sink.data(child.text_content or "")
                elif not tag.startswith("-"):  # a comment, a doctype
                    sink.start(tag, child.attributes)
                    walk(child)
                    sink.end(tag)

        root = LexborHTMLParser(text).root
        if root is not None:
            sink.start(root.tag, root.attributes)
            walk(root)
            sink.end(root.tag)
        sink.close()

    return _read(text, feed)


def reader(name: str) -> Callable[[str], Any]:
    from gateway.knowledge import htmltext

    return {"html.parser": htmltext.standard, "lxml": htmltext.with_lxml, "selectolax": lexbor}[
        name
    ]


def available(name: str) -> bool:
    try:
        reader(name)("<p>x</p>")
    except ImportError:
        return False
    return True


# The timed reading: every page's bytes read and the parser imported first, then every page
# parsed; prints the CPU seconds.
_READ = """
import sys, time
from pathlib import Path
from bench.parsers import reader
from gateway.knowledge.load import parse
html = reader(sys.argv[1])
files = [(str(p), p.read_bytes()) for p in sorted(Path(sys.argv[2]).rglob("*.htm*"))]
html("<p>imported before the clock starts</p>")
started = time.process_time()
for path, data in files:
    parse(path, data, html)
print(time.process_time() - started)
"""


def _sets(ctx: Context) -> list[tuple[str, Path]]:
    if ctx.sizes.real_docs:
        out = []
        for docs in (GIT_DOC, PG_DOC):
            if not docs.installed:
                raise RunFailed(docs.missing())
            folder = ctx.folder(f"parsers-{docs.name}")
            for rel in pages(docs.folder, HTML):
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_bytes((docs.folder / rel).read_bytes())
            out.append((docs.name, folder))
        return out
    generated = ctx.folder("parsers-generated")
    write_html_set(generated, ctx.sizes.generated_bytes)
    kb = ctx.folder("parsers-kb")
    for rel in pages(EXAMPLES_KB, HTML):
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_bytes((EXAMPLES_KB / rel).read_bytes())
    return [("generated", generated), ("examples/kb", kb)]


def _passages(article: Any) -> Any:
    from gateway.knowledge.passages import split

    if article is None:
        return None
    norm = " ".join
    return (
        norm(article.title.split()),
        str(article.kind),
        article.url,
        [(norm(p.heading.split()), norm(p.body(article).split())) for p in split(article)],
    )


def differing(folder: Path, name: str) -> int:
    """How many pages under `folder` parser `name` reads to other passages than
    html.parser does (whitespace aside)."""
    from gateway.knowledge.load import parse

    base, other = reader("html.parser"), reader(name)
    count = 0
    for path in sorted(folder.rglob("*.htm*")):
        data = path.read_bytes()
        a, b = (parse(str(path), data, r)[0] for r in (base, other))
        count += _passages(a) != _passages(b)
    return count


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    present = [p for p in PARSERS if available(p)]
    for missing in sorted(set(PARSERS) - set(present)):
        rows.append(Row(GROUP, missing, Unit.COUNT, note="skipped: not installed (bench/setup)"))
    env = child_env(ctx.scratch, {"PYTHONPATH": str(ROOT)})
    for label, folder in _sets(ctx):
        count = len(list(folder.rglob("*.htm*")))
        for name in present[1:]:
            rows.append(Row(GROUP, f"{label}: pages {name} reads otherwise", Unit.COUNT,
                            value=differing(folder, name), note=f"of {count}",
                            target=SAME_TARGET if name == "lxml" else None))  # fmt: skip
        commands = [
            Command(f"{label}: {name}", [ctx.python, "-c", _READ, name, str(folder)], None, env)
            for name in present
        ]
        runs = interleave(commands, rounds=ctx.sizes.build_rounds + 1, warmup=1, env=env,
                          cwd=ROOT)  # fmt: skip
        cpu = {c.name: Summary.of([float(r.stdout) for r in runs[c.name]]) for c in commands}
        rss = {c.name: Summary.of([r.maxrss for r in runs[c.name]]) for c in commands}
        base = commands[0].name
        for command in commands[1:]:
            rows.append(Row(GROUP, command.name + ", reading CPU", Unit.SECONDS,
                            cpu[command.name], cpu[base], base))  # fmt: skip
            rows.append(Row(GROUP, command.name + ", peak RSS", Unit.MIB, rss[command.name],
                            rss[base], base))  # fmt: skip
    rows += _imports(ctx, present, env)
    return rows


_MODULES = {"html.parser": "html.parser", "lxml": "lxml.etree", "selectolax": "selectolax.lexbor"}


def _imports(ctx: Context, present: list[str], env: dict[str, str]) -> list[Row]:
    commands = [
        Command(f"import {_MODULES[n]}", [ctx.python, "-c", f"import {_MODULES[n]}"], None, env)
        for n in present
    ]
    runs = interleave(commands, rounds=ctx.sizes.kb_rounds * 2, warmup=1, env=env, cwd=ROOT)
    wall = {c.name: Summary.of([r.wall for r in runs[c.name]]) for c in commands}
    base = commands[0].name
    rows = [Row(GROUP, c.name, Unit.MILLIS, wall[c.name], wall[base], base) for c in commands[1:]]
    for name in present[1:]:
        rows.append(Row(GROUP, f"{name}: installed size", Unit.MIB, value=_installed(name)))
    return rows


def _installed(name: str) -> float:
    files = importlib.metadata.files(name) or []
    located = [Path(f.locate()) for f in files]
    return float(sum(p.stat().st_size for p in located if p.is_file()))


if __name__ == "__main__":
    # `python -m bench.parsers FOLDER`: the pages each parser reads otherwise than html.parser.
    print(json.dumps({n: differing(Path(sys.argv[1]), n) for n in PARSERS[1:] if available(n)}))
