"""Every exit code the CLI can end with is an `ExitCode`, and so in the README's table
(tests/test_readme.py holds the table and the enum together): no module of cli/ returns
or exits with a bare number, gateway/ never ends the process, a stopping signal's code is
what a shell reports for it, and the codes Typer ends a run with on its own are members
too."""

from __future__ import annotations

import ast
import signal

import pytest
import typer

from cli.runtime.exitcodes import ExitCode
from cli.runtime.signals import exit_code_for_signal
from tests.architecture.imports import modules
from tests.support.cli_runner import run

_EXITS = {"SystemExit", "Exit", "exit"}  # SystemExit(n), typer.Exit(n), sys.exit(n), ctx.exit(n)


def _number(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def bare_exit_numbers(source: str) -> list[str]:
    """Where `source` returns or exits with an integer literal, as `line: code`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Return) and _number(node.value) is not None:
            found.append(f"{node.lineno}: return {_number(node.value)}")
        elif (
            isinstance(node, ast.Call)
            and node.args
            and _number(node.args[0]) is not None
            and _called(node) in _EXITS
        ):
            found.append(f"{node.lineno}: {_called(node)}({_number(node.args[0])})")
    return found


def test_the_check_finds_a_bare_exit_number() -> None:
    source = "import sys\ndef f() -> int:\n    if x:\n        return 66\n    sys.exit(3)\n"
    assert bare_exit_numbers(source) == ["4: return 66", "5: exit(3)"]
    assert bare_exit_numbers("def f() -> bool:\n    return True\n") == []


def test_no_module_of_the_cli_returns_or_exits_with_a_bare_number() -> None:
    found = {
        name: where
        for name, module in modules().items()
        if name.split(".")[0] == "cli"
        for where in [bare_exit_numbers(module.path.read_text())]
        if where
    }
    assert found == {}, "name the code: ExitCode.<NAME>"


def test_the_gateway_never_ends_the_process() -> None:
    """The library returns results and raises its own errors; the CLI picks the code."""
    ending = {
        name: node.lineno
        for name, module in modules().items()
        if name.split(".")[0] == "gateway"
        for node in ast.walk(ast.parse(module.path.read_text()))
        if isinstance(node, ast.Call) and _called(node) in _EXITS
    }
    assert ending == {}


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stopping_signal_exits_as_a_shell_reports_it(name: str) -> None:
    signum = getattr(signal, name)
    code = exit_code_for_signal(signum)
    assert isinstance(code, ExitCode)
    assert code == 128 + signum


def test_the_codes_typer_ends_with_on_its_own_are_exit_codes() -> None:
    assert ExitCode(typer.BadParameter.exit_code) is ExitCode.USAGE
    assert ExitCode(typer.TyperException.exit_code) is ExitCode.INTERNAL
    for args in (["--no-such-flag"], ["q", "--budget", "soon"], ["stats", "--no-such-flag"]):
        assert run(args).exit_code == ExitCode.USAGE, args
