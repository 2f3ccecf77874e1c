"""How `batch` asks each question and writes its record: as `ask` does, through the run's
one engine and one opened help centre (its passages within the budget, compacted for a
smaller window; its lines in the attempt log; the object `ask --json` prints),
and which exit code the batch ends with (the most serious any question earned)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from cli.commands.outcome import error_extra, retry_after_for, warn_invented
from cli.commands.record import log_question, scrubbed
from cli.runtime.exitcodes import ExitCode, exit_code_for

if TYPE_CHECKING:
    from cli.runtime.session import Session
    from gateway.answers.masking import Masked
    from gateway.batch import BadLine, Question
    from gateway.config import Config
    from gateway.knowledge.index import Index
    from gateway.knowledge.prompting import Prompting
    from gateway.model import Request, Result, Turn
    from gateway.observe.attemptlog import AttemptLog
    from gateway.seams import Compactor, StateStore

# Worst first: a bug, then a question no deployment could answer (needs a look), then
# one that may succeed later (`--resume` after a while), then bad input lines, refusals,
# and handoffs (each record says which ticket goes to a person).
_SEVERITY = (
    ExitCode.INTERNAL,
    ExitCode.UNAVAILABLE,
    ExitCode.TEMPFAIL,
    ExitCode.DATAERR,
    ExitCode.REFUSED,
    ExitCode.HANDOFF,
    ExitCode.ANSWERED,
)


class Prepared(NamedTuple):
    """A question ready to ask: masked, its turns, its prompts and request; `handed`: its
    `not_covered` handoff (no deployment is asked)."""

    masked: Masked
    turns: tuple[Turn, ...]
    prompts: Prompting
    request: Request
    handed: Result | None


class Asker:
    """Each question through the run's one engine, as `ask` asks it: its request (its own
    product, else --product; the passages of the session's help centre that answer it,
    within the budget, fewer for a smaller window), its lines in the attempt log, the exit
    code it earned. `index` is that help centre as every worker calls it: a thread-safe
    view (`knowledge.shared.Shared`)."""

    def __init__(
        self,
        session: Session,
        index: Index | None,
        engine_ask: Callable[[Request, Compactor], Result],
        log: AttemptLog | None,
        *,
        language: str | None = None,
    ) -> None:
        self._session = session
        self._config = session.config
        self._index = index
        self._engine_ask = engine_ask
        self._log = log
        self._redactor = session.redactor
        self._diag = session.diag
        self._debug = session.opts.debug
        self._language = language  # --language, for every question
        self._lock = threading.Lock()
        self._seen: set[ExitCode] = set()
        from gateway.answers.masking import Masker

        self._masker = Masker.of(self._config.privacy)

    def ask(self, question: Question) -> Result:
        """The question asked masked, as `ask` asks it; the Result the customer is shown
        (their values back in the answer), the log's line with the placeholders."""
        return self.ask_prepared(self.prepare(question))

    def ask_prepared(self, prepared: Prepared) -> Result:
        """`prepared` asked through the engine (unless it is handed off), and finished."""
        if prepared.handed is not None:  # the help centre does not cover it: no deployment asked
            return self.finish(prepared, prepared.handed, settle=False)
        return self.finish(prepared, self._engine_ask(prepared.request, prepared.prompts))

    def prepare(self, question: Question) -> Prepared:
        """The question's request, as `ask` builds it (masked, in its reply language, its
        passages within the budget), and its `not_covered` handoff when it is one."""
        from cli.commands import answering
        from cli.runtime import wiring
        from gateway.answers.masking import masked_turns

        began = time.monotonic()
        masked = self._masker.mask([*(t.content for t in question.turns), question.text])
        turns = masked_turns(masked, question.turns)
        language = wiring.reply_language(
            self._config, masked.question, turns, self._language, self._diag.warn
        )
        prompts = self._session.chat_prompting(
            masked, turns, language=language, product=question.product, index=self._index
        )
        request = prompts.request()
        handed = answering.uncovered(
            self._config, prompts.query, request, self._index, started=began
        )
        return Prepared(masked, turns, prompts, request, handed)

    def finish(self, prepared: Prepared, result: Result, *, settle: bool = True) -> Result:
        """`result` settled (`settle`: it is a deployment's reply), its exit code earned, its
        log line written; what the customer is shown, their values back in it."""
        from cli.commands import answering
        from gateway.answers.masking import unmask_result

        if settle:
            result = answering.settled(
                result, self._config, prepared.request.product, self._session.articles
            )
        self.earned(exit_code_for(result))
        masked = prepared.masked
        if self._log is not None:
            text = self._redactor.scrub(masked.question)
            thread = scrubbed(self._redactor, prepared.turns)
            log_question(self._log, self._config, result, text, now=time.time(), thread=thread)
        shown, invented = unmask_result(result, masked)
        warn_invented(self._diag, invented)
        return shown

    def by_fallback(self, result: Result) -> bool:
        from gateway.model import Status
        from gateway.observe.attemptlog import first_of_route

        served = result.status in (Status.ANSWERED, Status.REFUSED)
        if not served or result.deployment is None:  # a handoff no deployment was asked for
            return False
        return result.deployment != first_of_route(self._config, result.routed)

    def crashed(self, question: Question, exc: Exception) -> None:
        self.earned(ExitCode.INTERNAL)
        if self._debug:
            import traceback

            traceback.print_exception(exc, file=self._diag.stream)
        self._diag.error(
            f"internal error on the question with id {question.id!r} ({type(exc).__name__}: {exc})",
            fix="this is a bug in support-ask: run again with --debug for the traceback, "
            "and report it",
        )

    def earned(self, code: ExitCode) -> None:
        with self._lock:
            self._seen.add(code)

    def worst(self) -> ExitCode:
        """The batch's exit code: the most serious any question earned."""
        with self._lock:
            return next((c for c in _SEVERITY if c in self._seen), ExitCode.ANSWERED)


class JsonRecords:
    """The object of each output line, after its `id` (and a bad line's `line`)."""

    def __init__(self, store: StateStore, config: Config, environ: Mapping[str, str]) -> None:
        self._store = store
        self._config = config
        self._environ = environ

    def result(self, question: Question, result: Result) -> dict[str, object]:
        from cli.terminal.output import json_object

        # Exactly what `ask --json` prints, built by the same code.
        retry_after = retry_after_for(result, self._store, self._config, self._environ)
        return json_object(result, error_extra(result, retry_after))

    def bad_line(self, bad: BadLine) -> dict[str, object]:
        from cli.runtime.failure import CommandFailure, failure_json

        fix = 'one question per line, or JSON Lines: {"id": ..., "question": ...}'
        return failure_json(CommandFailure(ExitCode.DATAERR, f"line {bad.line}: {bad.reason}", fix))

    def crashed(self, question: Question, exc: Exception) -> dict[str, object]:
        from cli.runtime.failure import failure_json, failure_of

        failure = failure_of(exc)
        assert failure is not None  # an Exception always means something
        return failure_json(failure)
