"""What `support-ask stats` (cli.commands.stats_cmd) and `support-ask eval`
(cli.commands.eval_cmd) share.

Exit 4 ("the check failed") is theirs: a check that ran fine and found a problem needs a
code of its own, and 1 is taken by internal errors, 3 by refusals
(docs/decisions.md#exit-codes). Both
commands' output is the command's result, so it goes to stdout (a rich table, or one
JSON object with `--json`); warnings and the alert line go to stderr.
"""

from __future__ import annotations

from cli.runtime.exitcodes import ExitCode

CHECK_FAILED = ExitCode.CHECK_FAILED  # fallback share too high, a rule broken
