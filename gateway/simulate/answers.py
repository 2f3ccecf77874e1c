"""What a simulated deployment says when it answers.

Every success is tagged `[<deployment name>] ` so the user sees who served. After the tag
comes either a generic line (no articles to answer from) or what an `Answerer` says: with
`local_answerer`, what a model that follows the prompt would say, so that
`support-ask eval --simulate` checks the prompt's rules against realistic answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gateway.model import Article

if TYPE_CHECKING:
    from gateway.model import Request

Answerer = Callable[[str], str]
"""question -> answer text (without the deployment tag)."""

_TAG_WORDS = 1  # "[name]": a deployment name has no spaces (the config loader insists)


def tagged(deployment_name: str, text: str) -> str:
    """`text` tagged with who served; a handoff keeps its marker first, as the prompt
    asks, so the tag goes into its reason."""
    from prompts import HANDOFF_MARKER

    if text.startswith(HANDOFF_MARKER):
        return f"{HANDOFF_MARKER} [{deployment_name}]{text[len(HANDOFF_MARKER) :]}"
    return f"[{deployment_name}] {text}"


def answer_text(deployment_name: str, question: str) -> str:
    """The generic simulated answer: short, deterministic, and saying who answered."""
    asked = " ".join(question.split())
    if len(asked) > 80:
        asked = asked[:77].rstrip() + "..."
    topic = f"“{asked}”" if asked else "your question"
    return tagged(
        deployment_name,
        f"Thanks for asking about {topic}. Follow the steps in the matching help-centre"
        " article; if they do not solve it, reply here and I can open a ticket for you.",
    )


def local_answerer(articles: Sequence[Article], product: str) -> Answerer:
    """An answerer that follows the prompt: the offline ranker's answer from `articles`.

    It answers from the best-matching passage, citing it by its article's marker as a
    prompt holding every article whole numbers them, or hands off as the prompt says when
    nothing matches well enough, and leaves room for the deployment tag so that the
    tagged answer still keeps within the prompt's word limit.
    """
    from gateway.knowledge.select import everything
    from gateway.model import Request
    from prompts import WORD_LIMIT

    shared = tuple(articles)
    sources = everything(shared).sources
    return prompt_answerer(
        lambda question: Request(
            system="",
            question=question,
            max_output_tokens=WORD_LIMIT,
            articles=shared,
            product=product,
            sources=sources,
        )
    )


def prompt_answerer(request_for: Callable[[str], Request]) -> Answerer:
    """An answerer that follows the prompt, from what the prompt holds: the offline
    `local` deployment's answer to `request_for(question)` (the passages `ask` would send),
    within the prompt's word limit less the room for the deployment tag."""
    # Imported here: only `simulate` and `eval --simulate` with articles need the ranker.
    from gateway.providers import local
    from prompts import WORD_LIMIT

    def answer(question: str) -> str:
        return local.answer(request_for(question), words=WORD_LIMIT - _TAG_WORDS)

    return answer
