"""`ask --thread FILE|-`: the chat so far, read and checked before anything is called.

The question is the argument (or stdin's, with `-` as the question and a thread file);
with none, the thread's last customer message. A thread that cannot be read or used is
exit 66, naming the turn at fault and never quoting the customer's text.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cli.runtime.exitcodes import ExitCode
from cli.runtime.failure import CliError
from gateway.answers.thread import EXAMPLE, Chat, ThreadError, chat_of, parse_thread

STDIN = "-"


def read_chat(source: str, words: tuple[str, ...]) -> Chat:
    """The chat: the thread from `source` (a file, or `-` for stdin) and the question."""
    if source == STDIN and words == (STDIN,):
        raise CliError(
            "stdin cannot hold both the thread and the question",
            ExitCode.USAGE,
            fix="give the question as an argument, or leave it out to answer the thread's "
            "last customer message",
        )
    where = "stdin" if source == STDIN else source
    try:
        turns = parse_thread(_read(source))
        question = None
        if words == (STDIN,):
            question = sys.stdin.read()
        elif words:
            question = " ".join(words)
        return chat_of(question, turns)
    except ThreadError as exc:
        raise CliError(
            f"--thread {where}: {exc.message}",
            ExitCode.NOINPUT,
            fix=f"a thread is a JSON list of turns, oldest first: {EXAMPLE}",
        ) from None


def _read(source: str) -> bytes:
    if source == STDIN:
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise CliError(
            f"--thread {source}: no such file", ExitCode.NOINPUT, fix="check the path"
        ) from None
    except OSError as exc:
        raise CliError(
            f"--thread {source}: cannot read it ({exc.strerror or type(exc).__name__})",
            ExitCode.NOINPUT,
        ) from None
