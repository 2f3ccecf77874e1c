"""Fitting one question to each deployment's window: how many tokens it is, which route it
takes, and, with a compactor, the smaller request a deployment is sent instead of being
passed over.

A request is built to fit once per input limit (a window less the reply) and counted
exactly; a deployment that reports an overflow anyway is sent less, at most twice.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Config, Deployment
from gateway.engine.policy import Plan, plan_route, window_shortfall
from gateway.model import Request
from gateway.record import record
from gateway.seams import Compactor


@record
class Windows:
    """What a config's windows decide alike for every question, worked out once per
    engine: the smallest, and the plan of an input that fits it with the reply. (A record:
    a NamedTuple's class costs about 0.5 M instructions to define, and every question
    imports this module.)"""

    smallest: int
    plan: Plan  # every such input's: none is short of any window, which is what plans go by

    @classmethod
    def of(cls, config: Config) -> Windows:
        smallest = min(d.context_window for d in config.all_deployments())
        plan = plan_route(config, max(0, smallest - config.max_output_tokens))
        # By keyword: a record given its fields so keeps a dict of its own, which the
        # interpreter reads faster than one sharing the class's keys (read every question).
        return cls(smallest=smallest, plan=plan)


class Fitting:
    """One question's request and its route, and what each deployment is sent."""

    # With a compactor only (nothing else fits a request to a window):
    # input limit -> the request built to fit and its exact count (None: nothing fits)
    fitted: dict[int, tuple[Request, int] | None]
    limits: dict[str, int]  # deployment -> its limit after it overflowed
    shrunk: dict[str, int]  # deployment -> overflows it answered with less

    def __init__(
        self,
        config: Config,
        request: Request,
        compact: Compactor | None,
        count_tokens: Callable[[str], int],
        exact_tokens: bool,
        windows: Windows,
    ) -> None:
        self.config = config
        self.request = request
        self.compact = compact
        self.count_tokens = count_tokens
        if compact is not None:
            self.fitted, self.limits, self.shrunk = {}, {}, {}
        text = request.text
        # Every cl100k token is at least one byte, so the UTF-8 length bounds the count from
        # above. When even that bound fits every window, the exact count cannot change a
        # routing decision and loading the tokenizer (the slowest part of start-up) is skipped.
        bound = len(text) if text.isascii() else len(text.encode("utf-8"))
        # Whether every window holds the input with the reply (by the bound, not the count).
        self.fits_every = not exact_tokens and bound + config.max_output_tokens <= windows.smallest
        self.input_tokens: int = bound
        self.tokens_exact = not self.fits_every
        self.plan = windows.plan
        if not self.fits_every:
            self.input_tokens = count_tokens(text)
            self.plan = plan_route(config, self.input_tokens)

    def too_small(self, d: Deployment) -> str | None:
        """Why `d`'s window cannot take the question, not even compacted (None: it can).
        The offline ranker has no window to overflow."""
        if self.fits_every:
            return None
        shortfall = window_shortfall(self.config, self.input_tokens, d)
        if shortfall is not None and not d.provider.offline and self._fitted_for(d) is None:
            return shortfall
        return None

    def request_for(self, d: Deployment) -> Request:
        """What deployment `d` is asked: the request, or one compacted to fit its window."""
        fitted = None if self.compact is None else self._fitted_for(d)
        return self.request if fitted is None else fitted[0]

    def sent(self, d: Deployment | None) -> tuple[Request, int, bool]:
        """The request `d` was sent, its input tokens, and whether they were counted exactly
        (a compacted request always is)."""
        fitted = None if d is None or self.compact is None else self._fitted_for(d)
        if fitted is None:
            return self.request, self.input_tokens, self.tokens_exact
        return fitted[0], fitted[1], True

    def _fitted_for(self, d: Deployment) -> tuple[Request, int] | None:
        """The compacted request `d` is sent and its tokens; None: the request as it is."""
        if self.compact is None or d.provider.offline:
            return None  # the offline ranker needs no window: it gets everything
        limit = self.limits.get(d.name)
        if limit is None:
            if window_shortfall(self.config, self.input_tokens, d) is None:
                return None
            limit = d.context_window - self.config.max_output_tokens
        return self._fit(limit)

    def _fit(self, limit: int) -> tuple[Request, int] | None:
        """A request whose input is at most `limit` tokens, counted exactly (the builder
        only estimates: when it misses, it is asked again for proportionally less)."""
        if limit in self.fitted:
            return self.fitted[limit]
        assert self.compact is not None
        found: tuple[Request, int] | None = None
        target = limit
        for _ in range(4):
            request = self.compact.within(target) if target > 0 else None
            if request is None:
                break
            tokens = self.count_tokens(request.text)
            if tokens <= limit:
                found = (request, tokens)
                break
            target = int(target * limit / tokens * 0.9)
        self.fitted[limit] = found
        return found

    def shrink(self, d: Deployment) -> bool:
        """After `d` reported that the input overflowed its window: send it less (two
        thirds of what overflowed: its tokenizer counts more than ours), at most twice.
        False when there is nothing smaller to send."""
        if self.compact is None or d.provider.offline:
            return False
        self.shrunk[d.name] = self.shrunk.get(d.name, 0) + 1
        if self.shrunk[d.name] > 2:
            return False
        fitted = self._fitted_for(d)
        sent = self._exact_input() if fitted is None else fitted[1]
        limit = sent * 2 // 3
        smaller = self._fit(limit)
        if smaller is None or smaller[1] >= sent:
            return False
        self.limits[d.name] = limit
        return True

    def _exact_input(self) -> int:
        if self.tokens_exact:
            return self.input_tokens
        return self.count_tokens(self.request.text)
