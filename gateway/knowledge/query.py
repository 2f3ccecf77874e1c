"""What the help centre is searched for: the current message's words, and in a chat the
words of the conversation before it, each part weighted.

A follow-up ("it says it expired, how long does it last?") does not name what it is
about; the customer's earlier messages and the agent's last reply do. Their words join the
query at a lower weight, and a longer earlier message spreads its weight over its words
(its weight times the current message's word count, at least `FLOOR`, over its own, at
most its weight), so no earlier message outweighs the current one: when the customer
changes the subject ("and where is my invoice?"), the new subject wins. A word repeated
in the conversation counts at the highest weight it has. The ranker
(`gateway.knowledge.rank`) multiplies each term's idf by its weight; a plain question is
one part of weight 1, scored exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.knowledge.terms import query_terms
from gateway.model import Role, Turn
from gateway.record import record

# Chosen on the follow-up benchmark (bench/run quality): see bench/RESULTS.md.
EARLIER_CUSTOMER = 0.5  # the customer's earlier messages
LAST_AGENT = 0.35  # the agent's last reply, which names what was already suggested
# A follow-up of one or two words ("how?", "what's the command?") counts as three: the
# chat must still say what it is about.
FLOOR = 3


@record
class Query:
    """Texts and their weights, the current message first (weight 1)."""

    parts: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, question: str) -> Query:
        return cls(((question, 1.0),))

    @classmethod
    def of_chat(cls, question: str, turns: Sequence[Turn]) -> Query:
        parts: list[tuple[str, float]] = [(question, 1.0)]
        parts.extend((t.content, EARLIER_CUSTOMER) for t in turns if t.role is Role.CUSTOMER)
        agent = [t for t in turns if t.role is Role.AGENT]
        if agent:
            parts.append((agent[-1].content, LAST_AGENT))
        return cls(tuple(parts))

    def weights(self) -> dict[str, float]:
        """Each distinct term, in order of first appearance, at its highest weight."""
        out: dict[str, float] = {}
        current = 0
        for text, weight in self.parts:
            terms = query_terms(text)
            if not current:
                current = max(len(terms), FLOOR)
            elif terms:
                weight *= min(1.0, current / len(terms))
            for term in terms:
                if out.get(term, 0.0) < weight:
                    out[term] = weight
        return out


def as_query(query: str | Query) -> Query:
    return Query.of(query) if isinstance(query, str) else query
