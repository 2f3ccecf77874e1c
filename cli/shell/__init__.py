"""The shell of the command line: everything after `--version` (app), the Typer app and its
group (root, group), the root help's list of commands unbuilt (listing), which command a line
is for (routing, fastpath), and the one module that reaches into Typer's private insides
(typer_internals).
"""
