"""The chat as each wire format's turns: who said what, in the order the model reads it.

Every format gets the system prompt (in its own field or message), then the thread's turns,
then the current message. OpenAI's `messages` take any sequence of `user` / `assistant`
messages. Anthropic's Messages API and Gemini's `contents` expect the conversation to
alternate and to begin with the user (Anthropic: "roles must alternate" is a 400; Gemini
names its roles `user` and `model`), so for them consecutive messages of one side are
joined into one turn, and an agent's message before the customer's first (a greeting)
opens the first user turn, marked as the agent's.
"""

from __future__ import annotations

from gateway.model import Request, Role

AGENT_BEFORE = "(The support agent wrote first:) "


def sequence(request: Request) -> list[tuple[Role, str]]:
    """The thread's turns, then the current message as the customer's."""
    if not request.turns:  # most questions: no comprehension to build and run
        return [(Role.CUSTOMER, request.question)]
    return [(t.role, t.content) for t in request.turns] + [(Role.CUSTOMER, request.question)]


def alternating(request: Request) -> list[tuple[Role, str]]:
    """`sequence`, with consecutive turns of one side joined (a blank line between) and
    the agent's opening turns folded into the customer's first."""
    out: list[tuple[Role, str]] = []
    opening: list[str] = []
    for role, text in sequence(request):
        if not out and role is Role.AGENT:
            opening.append(text)
            continue
        if not out and opening:
            text = "\n\n".join(AGENT_BEFORE + t for t in opening) + "\n\n" + text
        if out and out[-1][0] is role:
            out[-1] = (role, out[-1][1] + "\n\n" + text)
        else:
            out.append((role, text))
    return out
