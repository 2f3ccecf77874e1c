"""The root help lists every command by its summary without building it
(cli.shell.listing), and reads exactly as it does with every command built: plain and rich,
narrow and wide. A command whose help changes, or a Typer that lists a command by more than
its name and summary, fails here."""

from __future__ import annotations

import pytest
import typer.main

from cli.runtime import common
from cli.shell import root, routing
from cli.shell.group import AskByDefault
from cli.shell.typer_internals import click


def _root_help(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    markup: str | None,
    width: int,
    *,
    built: bool,
) -> tuple[str, set[str]]:
    """The root help as a user sees it, and the commands built once it is written."""
    monkeypatch.setattr(root, "markup_mode", lambda: markup)
    monkeypatch.setenv("COLUMNS", str(width))
    group = typer.main.get_command(root.build_app())
    assert isinstance(group, AskByDefault)
    ctx = click.Context(group, info_name="support-ask", terminal_width=width)
    if built:
        for name in routing.LAZY_COMMANDS:
            assert group.get_command(ctx, name) is not None
    text = group.get_help(ctx)  # plain: returned; rich: printed on stdout
    return text + capsys.readouterr().out, set(group.commands)


@pytest.mark.parametrize("markup", [None, "rich"])
@pytest.mark.parametrize("width", [80, 120])
def test_the_root_help_reads_the_same_without_building_the_commands(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    markup: str | None,
    width: int,
) -> None:
    listed, built_for_it = _root_help(monkeypatch, capsys, markup, width, built=False)
    full, _ = _root_help(monkeypatch, capsys, markup, width, built=True)
    assert built_for_it == {routing.DEFAULT_COMMAND}
    assert all(name in listed for name in routing.LAZY_COMMANDS)
    assert listed == full


def test_every_lazy_command_is_listed_by_its_summary() -> None:
    # A lazy command without one is built to be listed: correct, but the help's cost again.
    assert set(common.SUMMARIES) == set(routing.LAZY_COMMANDS)


def test_a_command_is_still_built_for_its_own_help_and_its_errors() -> None:
    group = typer.main.get_command(root.build_app())
    assert isinstance(group, AskByDefault)
    ctx = click.Context(group, info_name="support-ask")
    stats = group.get_command(ctx, "stats")
    assert stats is not None and stats.params  # the real command, options and all
    assert "stats" in group.commands
