"""The CLI run in process through Typer's runner, as a user types it."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from cli.root import build_app


def run(args: list[str], input: str | None = None) -> Any:
    return CliRunner().invoke(build_app(), args, input=input, prog_name="support-ask")
