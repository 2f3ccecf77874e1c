"""One question's attempts as they are recorded: a row each, in the attempts table, the
JSON, the attempt log and the engine's log, told to the caller's `on_attempt` as it happens.

Every call is a row (answered, failed, stopped, interrupted), and so is every deployment
the question reached without calling it (skipped, with why), so the table names every
deployment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.config import Deployment
from gateway.engine.policy import Answered, Ending, Fatal, Refused, Stopped
from gateway.engine.turns import DeploymentTurn
from gateway.model import Attempt, ErrorKind, Failure, Outcome, Reply, Usage

log = logging.getLogger("support_ask.engine")

# An answered row's outcome, read once: on Python 3.11 reading an enum class's member
# goes through the hook of `EnumType.__getattr__`, about 900 instructions a read.
_ANSWERED = Outcome.ANSWERED


class Record:
    """The attempts of one question, in order."""

    def __init__(self, on_attempt: Callable[[Attempt], None] | None) -> None:
        self.on_attempt = on_attempt
        self.attempts: list[Attempt] = []

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        if log.isEnabledFor(logging.INFO):  # the line's arguments cost more than the check
            self._log(attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    @staticmethod
    def _log(attempt: Attempt) -> None:
        log.info(
            "%s #%d %s%s -> %s (wait %.2f s, %.3f s) %s",
            attempt.deployment,
            attempt.attempt,
            "" if attempt.status is None else f"{attempt.status} ",
            attempt.error_class or "ok",
            attempt.outcome,
            attempt.wait_s,
            attempt.elapsed_s,
            attempt.detail,
        )

    def skip(self, d: Deployment, why: str) -> None:
        self.add(Attempt(d.name, 0, None, None, Outcome.SKIPPED, 0.0, 0.0, why))

    def waited(self, turn: DeploymentTurn, wait: float, why: str) -> None:
        """The wait for the fleet's shared limits before the turn's next call."""
        key = None if turn.key is None else turn.key.variable
        row = Attempt(turn.deployment.name, 0, None, None, Outcome.WAITED, wait, 0.0, why, key)
        self.add(row)

    def ending(self, turn: DeploymentTurn, ending: Ending, elapsed: float) -> Usage | None:
        """The attempt that ended the question; the usage its row holds (None: no reply
        came), which is the result's too."""
        usage = None
        match ending:
            case Answered(reply=reply):
                usage = self.reply(turn, reply, elapsed)
            case Refused(text=text, by=by, reply=reply, failure=failure):
                if reply is not None:
                    usage = self.reply(turn, reply, elapsed)
                else:
                    assert failure is not None
                    self.failure(turn, failure, Outcome.FATAL, elapsed)
                name = turn.deployment.name
                log.warning("%s: the %s refused the question: %s", name, by, text[:200])
            case Stopped(failure=failure, reply=reply):
                note = "after text was written: not retried"
                usage = self.failure(
                    turn, failure, Outcome.STOPPED, elapsed, note=note, reply=reply
                )
            case Fatal(failure=failure):
                self.failure(turn, failure, Outcome.FATAL, elapsed)
        return usage

    def interrupted(self, turn: DeploymentTurn, elapsed: float) -> None:
        """The call in flight when the run was stopped (Ctrl-C, a signal): no reply came."""
        key = None if turn.key is None else turn.key.variable
        self.add(
            Attempt(
                turn.deployment.name,
                turn.calls,
                None,
                None,
                Outcome.INTERRUPTED,
                0.0,
                elapsed,
                "the run was stopped while this call waited for its reply",
                key,
            )
        )

    def reply(self, turn: DeploymentTurn, reply: Reply, elapsed: float) -> Usage:
        """The attempt that answered (or refused in a reply); its row's usage."""
        # A refusal delivered as a reply is an answer too: the deployment is healthy.
        d = turn.deployment
        usage = Usage.of(reply)
        self.add(
            Attempt(
                d.name,
                turn.calls,
                None if d.provider.offline else 200,  # no HTTP status offline
                ErrorKind.REFUSAL if reply.refused else None,
                Outcome.FATAL if reply.refused else _ANSWERED,
                0.0,
                elapsed,
                "the probe after its cooldown answered: cleared" if turn.probe else "",
                None if turn.key is None else turn.key.variable,
                usage,  # usage and cost by position: a record's keywords cost more
                _cost(d, reply),
            )
        )
        return usage

    def failure(
        self,
        turn: DeploymentTurn,
        failure: Failure,
        outcome: Outcome,
        elapsed: float,
        wait: float = 0.0,
        note: str = "",
        reply: Reply | None = None,
    ) -> Usage | None:
        """`reply` is the reply that came but was no answer (cut short, empty); its usage
        is returned as the row holds it."""
        detail = f"{failure.detail} ({note})" if note else failure.detail
        key = None if turn.key is None else turn.key.variable
        usage = None if reply is None else Usage.of(reply)
        self.add(
            Attempt(
                turn.deployment.name,
                turn.calls,
                failure.status,
                failure.kind,
                outcome,
                wait,
                elapsed,
                detail,
                key,
                usage,
                None if reply is None else _cost(turn.deployment, reply),
            )
        )
        return usage


def _cost(d: Deployment, reply: Reply) -> float | None:
    return None if d.price is None else d.price.cost_usd(reply.input_tokens, reply.output_tokens)
