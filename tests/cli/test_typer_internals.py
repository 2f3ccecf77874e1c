"""The private pieces of Typer that cli.shell.typer_internals relies on are all there, and
every parameter of every command is adapted: a Typer upgrade that changes them fails here,
by name, instead of quietly bringing pydantic and Typer's type labels back."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
import typer.main

from cli.shell import routing, typer_internals
from cli.shell.root import build_app


def test_this_typer_has_every_private_piece_support_ask_relies_on() -> None:
    gone = typer_internals.missing()
    assert not gone, (
        f"Typer {typer.__version__} changed what cli/shell/typer_internals.py relies on: "
        f"{', '.join(gone)}. Update that module, then the pin in pyproject.toml."
    )


def _every_command() -> Iterator[tuple[str, typer_internals.click.Command]]:
    group = typer.main.get_command(build_app())
    ctx = typer_internals.click.Context(group, info_name="support-ask")

    def walk(
        prefix: str, command: typer_internals.click.Command
    ) -> Iterator[tuple[str, typer_internals.click.Command]]:
        yield prefix, command
        for name in command.list_commands(ctx) if hasattr(command, "list_commands") else ():
            sub = command.get_command(ctx, name)
            assert sub is not None
            typer_internals.adapt(sub, ctx)
            yield from walk(f"{prefix} {name}".strip(), sub)

    typer_internals.adapt(group, ctx)
    yield from walk("", group)


def test_every_valued_parameter_of_every_command_is_coerced_without_pydantic() -> None:
    names = {name for name, _ in _every_command()}
    assert set(routing.LAZY_COMMANDS) | {"ask"} <= names  # the lazily built ones are in
    typerless = [
        f"{name or 'support-ask'} {param.name}"
        for name, command in _every_command()
        for param in command.params
        if hasattr(param, "_runtime_param")
        and not getattr(param, "is_flag", False)
        and not isinstance(param._runtime_param, typer_internals._PlainParam)
    ]
    assert not typerless, f"coerced by Typer (through pydantic): {typerless}"


def test_every_parameter_reads_as_click_writes_it_in_help() -> None:
    for name, command in _every_command():
        ctx = typer_internals.click.Context(command, info_name=name or "support-ask")
        text = command.get_help(ctx)
        for typed in ("<str>", "<int>", "<float>", "<path>", "<list["):
            assert typed not in text, f"`{name} --help` shows Typer's {typed!r}:\n{text}"
        usage = text.splitlines()[0]
        assert "{" not in usage, f"Typer's {{required}} argument in: {usage}"


@pytest.mark.slow
def test_a_choice_on_the_command_line_does_not_import_pydantic(tmp_path: Path) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("How do I reset my password?\n")
    asked = ["batch", str(questions), "--format", "text", "-d", "local", "-q"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli", *asked],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert "pydantic" not in imported
    bad = subprocess.run(
        [sys.executable, "-m", "cli", "batch", str(questions), "--format", "yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "'yaml' is not one of 'auto', 'jsonl', 'text'." in bad.stderr
