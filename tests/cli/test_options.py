"""The options of `ask`, declared once: `batch` takes those it shares with `ask` with the
same meaning, and the fast path parses what Typer parses."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.runtime.options import AskOptions, Command, Kind, declared_options
from cli.shell.fastpath import parse_ask
from cli.shell.root import build_app

SHARED = [
    *("-a", "kb", "--articles", "more/x.md", "-c", "c.yaml", "--state", "redis://h:1/0"),
    *("--product", "Globex", "-q", "-v", "-v", "--debug", "--log", "l.jsonl", "--no-log"),
    *("-d", "fallback", "--deployment=local", "--budget", "2.5", "--timeout=1"),
    *("--max-article-tokens", "all"),
]


def test_batch_reads_the_shared_options_as_ask_does(monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.commands.batch_cmd as batch_cmd

    seen: list[batch_cmd.BatchOptions] = []
    monkeypatch.setattr(batch_cmd, "run_batch", lambda opts, diag: seen.append(opts) or 0)
    done = CliRunner().invoke(build_app(), ["batch", "questions.txt", "-j", "2", *SHARED])
    assert done.exit_code == 0, done.output
    asked = parse_ask(["q", *SHARED], environ={}, stdin_tty=False)
    assert asked is not None
    (batch,) = seen
    assert batch.ask == AskOptions(**{**vars(asked), "words": ()})
    assert batch.quiet and batch.concurrency == 2


def test_ask_options_batch_has_no_place_for_are_refused_by_batch() -> None:
    for flag in ("--json", "--stream", "--allow-restart", "--show-attempts"):
        done = CliRunner().invoke(build_app(), ["batch", "questions.txt", flag])
        assert done.exit_code == 2
        assert f"No such option: {flag}" in done.output


def test_batch_lists_progress_every_after_quiet() -> None:
    shown = CliRunner().invoke(build_app(), ["batch", "--help"], env={"NO_COLOR": "1"}).output
    order = [shown.index(flag) for flag in ("--concurrency", "--quiet", "--progress-every", "-v")]
    assert order == sorted(order)


def test_every_option_has_help_and_a_value_name_when_it_takes_a_value() -> None:
    for command in Command:
        for declared in declared_options(command):
            assert declared.spec.help_in(command).endswith(".")
            takes_value = declared.spec.kind in (Kind.VALUE, Kind.MULTI)
            assert (declared.spec.metavar is not None) == takes_value, declared.name
