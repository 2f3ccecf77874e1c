"""Reading a chat's thread: what it accepts, what it refuses (naming the turn, never
quoting the customer), which message is the question, and what fits the budget."""

from __future__ import annotations

import json

import pytest

from gateway.answers.thread import (
    MAX_TURNS,
    Chat,
    ThreadError,
    chat_of,
    fit_turns,
    parse_thread,
)
from gateway.model import Role, Turn

C, A = Role.CUSTOMER, Role.AGENT


def test_the_roles_of_both_vocabularies_are_read_oldest_first() -> None:
    text = json.dumps(
        [
            {"role": "customer", "content": " I can't log in "},
            {"role": "assistant", "content": "Use the reset link."},
            {"role": "User", "content": "It expired."},
            {"role": "agent", "content": "Ask for a new one."},
        ]
    )
    assert parse_thread(text) == (
        Turn(C, "I can't log in"),
        Turn(A, "Use the reset link."),
        Turn(C, "It expired."),
        Turn(A, "Ask for a new one."),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"role": "customer", "content": "my card 4111"', "not JSON (line 1, column"),
        ('{"role": "customer", "content": "hi"}', "expected a JSON list of turns, got an object"),
        ('[{"role": "customer", "content": "hi"}, "hello"]', "turn 1: expected an object"),
        ('[{"role": "bot", "content": "secret text"}]', "turn 0: role 'bot' is not one of"),
        ('[{"content": "hi"}]', "turn 0: no role"),
        ('[{"role": "agent", "content": "   "}]', "turn 0: the message is empty"),
        ('[{"role": "agent", "content": 5}]', "turn 0: content must be text, got a number"),
        (
            "[" + ",".join(['{"role": "agent", "content": "x"}'] * (MAX_TURNS + 1)) + "]",
            "201 turns",
        ),
        ('[{"role": "agent", "content": "' + "x" * 300_000 + '"}]', "over 256 KiB"),
    ],
)
def test_a_bad_thread_names_the_turn_at_fault_and_quotes_nothing(text: str, message: str) -> None:
    with pytest.raises(ThreadError) as caught:
        parse_thread(text)
    assert message in caught.value.message
    assert "4111" not in caught.value.message and "secret" not in caught.value.message


def test_the_question_is_the_one_given_else_the_last_customer_message() -> None:
    turns = (Turn(C, "I can't log in"), Turn(A, "Reset it."), Turn(C, "It expired."))
    assert chat_of("How long does it last?", turns) == Chat("How long does it last?", turns)
    assert chat_of(None, turns) == Chat("It expired.", turns[:2])
    assert chat_of(None, (*turns, Turn(A, "One moment."))) == Chat("It expired.", turns[:2])
    with pytest.raises(ThreadError, match="no customer message"):
        chat_of(None, (Turn(A, "Hello!"),))


def test_the_oldest_turns_go_first_but_the_first_customer_message_stays() -> None:
    turns = (
        Turn(A, "Hi, how can I help?"),
        Turn(C, "I can't log in " + "x " * 40),
        Turn(A, "word " * 200),
        Turn(C, "It expired."),
        Turn(A, "Ask for a new link."),
    )
    assert fit_turns(turns, 100_000) == (turns, 0)
    kept, left_out = fit_turns(turns, 60)
    assert kept == (turns[1], turns[3], turns[4])
    assert left_out == 2
