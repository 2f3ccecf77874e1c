"""`python -m cli` runs the same command line as the `support-ask` script."""

from cli.shell.app import main

main(prog_name="support-ask")
