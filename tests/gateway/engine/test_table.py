"""The engine's table: what each kind of failure means, against the README's tables."""

from __future__ import annotations

import pytest

from gateway.engine.table import TABLE
from gateway.model import Decision, ErrorKind

K = ErrorKind
RETRY = Decision.RETRY
FAIL = Decision.FAIL_OVER
FATAL = Decision.FATAL

# The README's table of error classes: kind -> (decision, cools the deployment down).
CLASSES = {
    K.RATE_LIMIT: (RETRY, True),
    K.OVERLOADED: (RETRY, True),
    K.SERVER: (RETRY, True),
    K.TIMEOUT: (RETRY, True),
    K.NETWORK: (RETRY, True),
    K.QUOTA: (FAIL, True),
    K.AUTH: (FAIL, True),
    K.MODEL_NOT_FOUND: (FAIL, True),
    K.CONTEXT_WINDOW: (FAIL, False),
    K.BAD_REQUEST: (FATAL, False),
    K.REFUSAL: (FATAL, False),
    K.UNKNOWN: (RETRY, True),
    # Answers that are not answers: an empty reply, or one cut short.
    K.OUTPUT_LIMIT: (FAIL, False),
    K.EMPTY: (RETRY, True),
}


def test_the_table_covers_every_kind() -> None:
    assert set(TABLE) == set(ErrorKind)


@pytest.mark.parametrize("kind", list(ErrorKind), ids=str)
def test_the_table_matches_the_readme(kind: ErrorKind) -> None:
    assert (TABLE[kind].decision, TABLE[kind].cools) == CLASSES[kind]


def test_the_keys_failures_are_a_bad_key_an_empty_quota_and_a_rate_limit() -> None:
    # The README's "what each failure cools": these cool the pair (deployment, key).
    assert {k for k, row in TABLE.items() if row.key_scoped} == {K.AUTH, K.QUOTA, K.RATE_LIMIT}


def test_what_clears_by_itself_is_what_a_retry_may_fix_but_an_empty_answer() -> None:
    # "Retry later" (exit 75) when these are why no deployment answered; an empty answer
    # is retried, but a deployment that keeps answering nothing is no outage.
    transient = {k for k, row in TABLE.items() if row.transient}
    assert transient == {k for k, row in TABLE.items() if row.decision is RETRY} - {K.EMPTY}
