"""A support chat as the customer and the agent wrote it (`--thread FILE`, a `batch`
line's `thread`): a JSON list of `{"role": ..., "content": ...}`, oldest first.

Read strictly, before any call: a thread that is not what it should be is the caller's
mistake (exit 66), named with the turn at fault, never half-used. Its text is customer
data: no message here quotes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gateway.model import Role, Turn
from gateway.record import record

# The roles a thread may name: ours, and the chat APIs' names for the same two sides.
ROLES = {
    "customer": Role.CUSTOMER,
    "user": Role.CUSTOMER,
    "agent": Role.AGENT,
    "assistant": Role.AGENT,
}
MAX_TURNS = 200  # a chat longer than this is a backlog, not a conversation
MAX_BYTES = 256 * 1024  # the whole thread as read


class ThreadError(Exception):
    """A thread that cannot be used. `turn` is the index at fault (from 0), None when the
    thread as a whole is; `message` never quotes the customer's text."""

    def __init__(self, message: str, *, turn: int | None = None) -> None:
        where = "" if turn is None else f"turn {turn}: "
        super().__init__(f"{where}{message}")
        self.message = f"{where}{message}"
        self.turn = turn


EXAMPLE = '[{"role": "customer", "content": "I can\'t log in"}, {"role": "agent", "content": "…"}]'


def parse_thread(text: str | bytes) -> tuple[Turn, ...]:
    """The turns of a thread's JSON text, oldest first."""
    if len(text) > MAX_BYTES:
        raise ThreadError(f"the thread is over {MAX_BYTES // 1024} KiB; pass the recent turns only")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ThreadError(f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ThreadError("not UTF-8 text") from None
    return turns_of(data)


def turns_of(data: object) -> tuple[Turn, ...]:
    """The turns of a thread already decoded from JSON (a `batch` line's `thread`)."""
    if not isinstance(data, list):
        raise ThreadError(f"expected a JSON list of turns, got {_kind(data)}; e.g. {EXAMPLE}")
    if len(data) > MAX_TURNS:
        raise ThreadError(f"{len(data)} turns, over {MAX_TURNS}; pass the recent turns only")
    return tuple(_turn(i, item) for i, item in enumerate(data))


def _turn(index: int, item: object) -> Turn:
    if not isinstance(item, dict):
        raise ThreadError(
            f'expected an object {{"role": ..., "content": ...}}, got {_kind(item)}', turn=index
        )
    role = item.get("role")
    if not isinstance(role, str) or role.lower() not in ROLES:
        shown = repr(role) if isinstance(role, str) and len(role) <= 20 else _kind(role)
        raise ThreadError(
            f"role {shown} is not one of {', '.join(ROLES)}"
            if "role" in item
            else "no role; give customer or agent",
            turn=index,
        )
    content = item.get("content")
    if not isinstance(content, str):
        raise ThreadError(f"content must be text, got {_kind(content)}", turn=index)
    if not content.strip():
        raise ThreadError("the message is empty", turn=index)
    return Turn(ROLES[role.lower()], content.strip())


def _kind(value: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "text",
        bool: "true/false",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


@record
class Chat:
    """The current message and the turns before it."""

    question: str
    turns: tuple[Turn, ...]


def chat_of(question: str | None, turns: Sequence[Turn]) -> Chat:
    """The question asked: the one given, after the whole thread; else the thread's last
    customer message, after the turns before it."""
    if question is not None:
        return Chat(question, tuple(turns))
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].role is Role.CUSTOMER:
            # The agent's turns after it (none, usually) were written before it was asked.
            return Chat(turns[index].content, tuple(turns[:index]))
    raise ThreadError("the thread has no customer message to answer, and no question was given")


# The most the thread's turns take of a first request, in estimated tokens: a long chat
# must not crowd out the passages that answer it (a smaller window gets less: see
# `gateway.knowledge.prompting`).
THREAD_TOKENS = 3000


def fit_turns(turns: Sequence[Turn], room: int) -> tuple[tuple[Turn, ...], int]:
    """The turns that fit `room` estimated tokens, and how many were left out: the newest
    first, the oldest go, but the customer's first message (what the chat is about) stays."""
    from gateway.tokens import estimate

    sizes = [estimate(t.content) for t in turns]
    if sum(sizes) <= room:
        return tuple(turns), 0
    first = next((i for i, t in enumerate(turns) if t.role is Role.CUSTOMER), None)
    kept = {first} if first is not None else set()
    left = room - (sizes[first] if first is not None else 0)
    for index in range(len(turns) - 1, -1, -1):
        if index == first:
            continue
        if sizes[index] > left:
            break  # a gap in the middle of a chat reads worse than a shorter chat
        kept.add(index)
        left -= sizes[index]
    return tuple(t for i, t in enumerate(turns) if i in kept), len(turns) - len(kept)
