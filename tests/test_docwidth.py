"""The docs' width check (scripts/docwidth.py, run by scripts/check): a prose line past 100
columns fails it, with its page and line; what cannot be wrapped does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "docwidth.py"
WORDS = "a page of prose that goes on and on " * 4  # 144 columns, spaces throughout


def check(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(page)], capture_output=True, text=True, timeout=60
    )


def test_a_prose_line_past_the_width_is_named_with_its_line(tmp_path: Path) -> None:
    wide = ("x" * 96 + " yyyyy").strip()
    done = check(tmp_path, f"# Title\n\nA short line.\n{wide}\n- {WORDS.strip()}\n")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{tmp_path / 'page.md'}:4: 102 columns, more than 100: wrap it",
        f"{tmp_path / 'page.md'}:5: 145 columns, more than 100: wrap it",
    ]


def test_the_width_itself_and_what_cannot_be_wrapped_pass(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "x" * 49 + " " + "y" * 50,  # exactly 100
            "````md",
            "```",  # shorter than its fence: a line of the block, not its end
            f"echo {WORDS}",  # a command, as typed
            "````",
            f"| {WORDS} | a table row |",
            "See",
            "https://example.com/" + "a" * 90,  # one word past the width
            '- `{"error":{"message":"Rate limit exceeded","type":"rate_limited","code":"1300",'
            '"raw_status_code":429}}`',  # a code span, kept whole
        ]
    )
    done = check(tmp_path, text + "\n")
    assert (done.returncode, done.stdout) == (0, "")


def test_a_long_word_does_not_excuse_the_words_beside_it(tmp_path: Path) -> None:
    done = check(tmp_path, "See https://example.com/" + "a" * 90 + "\n")
    assert done.returncode == 1 and ":1: 114 columns" in done.stdout
