"""The requests for one question: within the budget, and smaller ones on demand.

`Prompting.request()` is what every deployment is asked first (every article when they fit
the budget, else the best passages up to it). `Prompting.within(tokens)` implements the
engine's `Compactor` seam: the same question with the best passages that fit an input of
`tokens` tokens, for a deployment whose window is smaller, or that overflowed.
"""

from __future__ import annotations

from gateway.answers.language import Language, reply_instruction
from gateway.answers.thread import THREAD_TOKENS, fit_turns
from gateway.knowledge.index import Index
from gateway.knowledge.query import Query
from gateway.knowledge.select import Selection, best_within, select
from gateway.model import Request, Turn
from gateway.tokens import estimate
from prompts import render


class Prompting:
    def __init__(
        self,
        *,
        template: str,
        product: str,
        question: str,
        max_output_tokens: int,
        index: Index | None,
        budget: int | None,
        query: str | Query | None = None,
        turns: tuple[Turn, ...] = (),
        language: Language | None = None,
        wording: tuple[tuple[str, str], ...] = (),
        min_relevance: float | None = None,
    ) -> None:
        self.template = template
        self.product = product
        self.question = question
        # What the help centre is searched for: the question unless told otherwise (the
        # chat's weighted words, without placeholders: no customer data reaches the index).
        self.query = question if query is None else query
        self.turns = turns  # the chat before the question, oldest first
        self.language = language  # the language to reply in; None: as the prompt says
        self.wording = wording  # the fixed phrases in that language (`Request.wording`)
        self.min_relevance = min_relevance  # `Request.min_relevance`
        self.max_output_tokens = max_output_tokens
        self.index = index
        self.budget = budget

    def request(self) -> Request:
        """Every article when they fit the budget (or there is none), else the best
        passages up to it."""
        turns = fit_turns(self.turns, THREAD_TOKENS)
        if self.index is None:
            return self.build(Selection((), whole=True), turns)
        return self.build(select(self.query, self.index, self.budget), turns)

    def within(self, tokens: int) -> Request | None:
        """The best passages that fit an input of about `tokens` tokens in all (an
        estimate: the engine counts what it gets); None when the prompt and the question
        alone are more."""
        bare = self.build(Selection((), whole=False))
        room = tokens - estimate(bare.text)
        if room < 0:
            return None
        # The thread takes at most half of what is left, the passages the rest.
        turns = fit_turns(self.turns, min(THREAD_TOKENS, room // 2))
        room -= sum(estimate(t.content) for t in turns[0])
        if self.index is None:
            return self.build(Selection((), whole=False), turns)
        return self.build(best_within(self.query, self.index, max(room, 0)), turns)

    def build(self, selection: Selection, turns: tuple[tuple[Turn, ...], int] = ((), 0)) -> Request:
        system = render(
            self.template,
            product=self.product,
            articles=selection.articles,
            passages=None if selection.whole else selection.sources,
        )
        if self.language is not None:
            # After the template, whatever it says: a team's own prompt gets it too.
            system = f"{system.rstrip()}\n\n{reply_instruction(self.language)}\n"
        return Request(
            system=system,
            question=self.question,
            max_output_tokens=self.max_output_tokens,
            articles=selection.articles,
            product=self.product,
            sources=selection.sources,
            turns=turns[0],
            turns_left_out=turns[1],
            turn_tokens=sum(estimate(t.content) for t in turns[0]),
            language=None if self.language is None else self.language.code,
            wording=self.wording,
            min_relevance=self.min_relevance,
        )
