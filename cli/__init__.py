"""support-ask's command line: argument parsing, rendering and exit codes.

Nothing is imported here: `support-ask --version` must not pay for Typer or rich.
"""
