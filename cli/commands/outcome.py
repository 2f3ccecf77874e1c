"""How a question's end reaches the user: what stderr says about it (a refusal, a handoff,
an ungrounded answer, a fallback, a failure and its fix, placeholders the model made up)
and what `--json` adds to a failure, for `ask`, `batch` and `simulate` alike."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from cli.runtime.exitcodes import ExitCode, exit_code_for
from cli.runtime.failure import CliError
from gateway.model import FailureKind, RefusedBy, Result, Status

if TYPE_CHECKING:
    from cli.terminal.diag import Diag
    from gateway.config import Config
    from gateway.seams import StateStore


def _fix_for(result: Result, code: ExitCode, retry_after: float | None = None) -> str:
    kind = None if result.error is None else result.error.kind
    if code is ExitCode.TEMPFAIL:
        from gateway.units import countdown

        when = "later" if not retry_after else f"in {countdown(retry_after)}"
        return (
            f"retry {when}; `support-ask cooldowns` shows when each deployment is back "
            "(`support-ask cooldowns reset` clears them)"
        )
    if kind is FailureKind.TOO_LARGE:
        return "ask a shorter question or pass fewer articles"
    if kind is FailureKind.INCOMPLETE and result.finish_reason is not None:
        return (
            f"the answer above ended early (finish_reason {result.finish_reason}): raise "
            "max_output_tokens in the config, or ask again"
        )
    if kind is FailureKind.INCOMPLETE:
        return "the answer above is cut short; ask again"
    if code is ExitCode.DATAERR:
        return "this request cannot succeed as sent; see the detail above"
    return "check keys and endpoints with `support-ask config check`"


def report_failure(diag: Diag, result: Result, retry_after: float | None = None) -> None:
    code = exit_code_for(result)
    fix = _fix_for(result, code, retry_after)
    if result.error is None:
        diag.error(f"the question failed ({result.status})", fix=fix)
        return
    diag.error(result.error.message)
    for d in result.error.deployments:
        diag.detail(f"  {d.name}: {d.last_error}")
    diag.detail(f"  fix: {fix}")


def report_outcome(
    diag: Diag, result: Result, config: Config, retry_after: float | None = None
) -> None:
    from cli.terminal.render import fallback_notice

    if result.status is Status.REFUSED:
        refusal = result.refusal
        if refusal is not None and refusal.by is RefusedBy.PROVIDER:
            # Nothing the model wrote exists: stdout stays empty, and this says why.
            diag.notice(
                f"the provider's content filter blocked this request (deployment "
                f"{result.deployment}); nothing was answered: {refusal.message}"
            )
        else:
            diag.notice(
                f"the model refused (deployment {result.deployment}); its reply is on stdout as is"
            )
    elif result.status is not Status.ANSWERED:
        report_failure(diag, result, retry_after)
        return
    elif result.handoff is not None:
        from cli.commands.answering import handoff_notice

        diag.notice(handoff_notice(result))
    elif result.grounded is False:
        diag.warn(
            "the answer cites no passage of the help centre (grounded: false): check it "
            "before posting, or set answers.require_citation: true to hand such answers off"
        )
    notice = fallback_notice(result, config)
    if notice:
        diag.notice(notice)


def warn_invented(diag: Diag, invented: Sequence[str]) -> None:
    """Placeholders in the answer that stand for nothing the customer wrote."""
    if invented:
        diag.warn(
            f"the answer holds {', '.join(invented)}, which stands for nothing the customer "
            "wrote (the model made it up); it is shown as written"
        )


def check_restart(allow_restart: bool, *, stream: bool, json_lines: bool) -> None:
    """--allow-restart speaks only JSON Lines: a restart is an event a consumer reads."""
    if allow_restart and not (stream and json_lines):
        raise CliError(
            "--allow-restart needs --stream and --json: a restart is a JSON line telling "
            "the consumer to drop the text it showed",
            ExitCode.USAGE,
            fix="add --stream --json, or leave out --allow-restart",
        )


def retry_after_for(
    result: Result, store: StateStore | None, config: Config, environ: Mapping[str, str]
) -> float | None:
    """For a question that earned exit 75: the seconds until a deployment can be called
    (`store` None: no deployment was to be asked)."""
    if store is None or exit_code_for(result) is not ExitCode.TEMPFAIL:
        return None
    from cli.runtime.common import seconds_until_callable

    return seconds_until_callable(store, config, environ, time.time())


def error_extra(result: Result, retry_after: float | None) -> dict[str, object] | None:
    """What `--json` adds to a failure's `error`: exit 75 says when to come back, so a
    script can sleep that long, not guess."""
    if exit_code_for(result) is not ExitCode.TEMPFAIL:
        return None
    return {"retry_after_s": None if retry_after is None else round(retry_after, 1)}
