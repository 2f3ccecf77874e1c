"""The top-level command group: `ask` is the default command.

`support-ask "How do I ...?"` runs `ask`; `support-ask simulate ...` runs `simulate`.
A first word that looks like a mistyped command name (one bare word close to a command:
`simulat`, `cooldown`) is not asked as a question but rejected with Typer's
"Did you mean ...?" and exit 2, because sending `cooldown` to an LLM is never what was meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from difflib import get_close_matches

from typer.core import TyperGroup

from cli.shell import routing
from cli.shell.typer_internals import adapt
from cli.shell.typer_internals import click as _click

# Set in the context's meta while the root group formats its help.
_LISTING = "support_ask.listing"


class AskByDefault(TyperGroup):
    """The root group. `lazy` names commands built only when used (command name -> module
    with `register(app)`): a question never pays for building `simulate` or `stats`."""

    lazy: Mapping[str, str] = {}
    markup: str | None = None

    def command_names(self) -> list[str]:
        return [*self.commands, *(name for name in self.lazy if name not in self.commands)]

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return self.command_names()

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            if ctx.meta.get(_LISTING):
                from cli.shell.listing import stand_in

                listed = stand_in(cmd_name)
                if listed is not None:
                    return listed
            self._load(self.lazy[cmd_name])
        command = self.commands.get(cmd_name)
        if command is not None:
            adapt(command, ctx)
        return command

    def _load(self, module_name: str) -> None:
        """Register the module's commands on a scratch app and adopt the click commands."""
        import importlib

        import typer
        import typer.main

        scratch = typer.Typer(add_completion=False, rich_markup_mode=self.markup)  # type: ignore[arg-type]
        importlib.import_module(module_name).register(scratch)
        built = typer.main.get_command(scratch)
        if isinstance(built, TyperGroup):
            adopted = dict(built.commands)
        else:  # a lone command comes back as itself
            adopted = {built.name or "": built}
        for name, command in adopted.items():
            self.commands.setdefault(name, command)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The root help, listing each command not built yet by its summary alone (see
        cli.shell.listing): the list is all that help needs of it."""
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as error:
            # Typer suggests from the commands built so far; suggest from all of them.
            matches = get_close_matches(args[0], self.command_names()) if args else []
            if matches and "Did you mean" not in error.message:
                suggestions = ", ".join(repr(m) for m in matches)
                error.message = f"{error.message.rstrip('.')}. Did you mean {suggestions}?"
            raise

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        adapt(self, ctx)
        help_for = routing.help_request(args, self.command_names())
        if help_for is not None:  # `support-ask help [COMMAND]`: what a user means by it
            args = [*help_for, "--help"]
        ctx.meta["support_ask.args"] = list(args)
        if not ctx.resilient_parsing and self.routes_to_default(args):
            ctx.meta["support_ask.default_command"] = True
            args = [routing.DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: _click.Context) -> object:
        try:
            return super().invoke(ctx)
        except _click.exceptions.UsageError as error:
            # `support-ask stats on my usage -a kb`: a question that starts with a command's
            # name reaches that command, which cannot make sense of the words. Say how to
            # ask it instead of only that the words are unexpected.
            args = ctx.meta.get("support_ask.args") or []
            if error.ctx is not ctx and args and self._stray_words(ctx, args, error.message):
                import shlex

                error.message = (
                    f"{error.message.rstrip('.')}.\n"
                    f"To ask it as a question, say `ask` first: "
                    f"{ctx.command_path} ask {shlex.join(args)}"
                )
            raise

    def routes_to_default(self, args: list[str]) -> bool:
        return routing.routes_to_default(args, self.command_names())

    def _stray_words(self, ctx: _click.Context, args: list[str], message: str) -> bool:
        """Whether a command's usage error comes from words it has no place for: words
        left over, a subcommand that is not one, or (`stats on my usage -a kb`) a flag
        of `ask` after words that a command without arguments cannot have."""
        if "unexpected extra argument" in message or message.startswith("No such command"):
            return True
        if not message.startswith("No such option") or len(args) < 2 or args[1][:1] == "-":
            return False
        command = self.get_command(ctx, args[0])
        takes_words = any(p.param_type_name == "argument" for p in getattr(command, "params", []))
        return command is not None and not takes_words
