"""The shell of the command line: the entry point (app), the Typer app and its group (root,
group), which command a line is for (routing, fastpath), help text (helpnames), parameter
coercion (plainparams) and signals.
"""
