"""The `--fail` grammar: which call of which deployment fails, and how.

    NAME=SPEC[,SPEC...]          specs apply in order, one call after another
    SPEC  = WHAT [xCOUNT] [@DELAY]
    WHAT  = 400..599             that HTTP status, with the provider's real error body
          | timeout              no answer: the read times out
          | reset                the connection drops before any byte
          | cut:N  (or cutN)     a streamed answer stops after N text deltas, connection dropped
          | slow:DURATION        the first text (a whole reply: the response) only after
                                 DURATION, e.g. slow:12s; the client may give up first
          | stall:N              a streamed answer goes silent after N text deltas (a whole
                                 reply: after its headers) until the client gives up
          | limit                an answer cut short by the output limit (finish_reason
                                 length, stop_reason max_tokens, finishReason MAX_TOKENS)
          | empty                a 200 answer with no text at all
          | refusal              a 200 answer that refuses (the provider's refusal form)
          | blocked              the prompt itself is flagged (Gemini promptFeedback,
                                 OpenAI 400 invalid_prompt, Azure 400 content_filter;
                                 Anthropic has no such form and refuses instead)
          | overflow             the provider says the input exceeds the context window
          | quota                quota or billing exhausted (not a rate limit)
          | ok                   a normal answer (to schedule failures after some successes)
    COUNT = N | *                how many calls in a row; * = every call from then on
    DELAY = N s | N ms           a Retry-After, placed where that provider puts it

`GRAMMAR` is the user-facing copy. A spec with no count means *every call*: `primary=401`
keeps the deployment broken, which is what a broken key does; write `429x2` for "twice,
then fine". Once a schedule's finite steps are used up the deployment answers normally; a
step that repeats forever must be the last one (anything after it could never happen, so
it is an error).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum

from gateway.config import Deployment
from gateway.model import ProviderKind
from gateway.record import record

GRAMMAR = """\
fault spec: NAME=SPEC[,SPEC...]   (specs apply in order, one call after another)
  SPEC  = WHAT[xCOUNT][@DELAY]
  WHAT  = an HTTP status 400-599 | timeout | reset | cut:N | slow:DURATION | stall:N
          | limit | empty | refusal | blocked | overflow | quota | ok
  COUNT = N or * (every call); no count means every call
  DELAY = Retry-After, e.g. @2s or @500ms (only after a status)
examples: primary=429x3@2s   fallback=503x*   primary=timeoutx2,cut:5   long=401
          primary=slow:12s   fallback=stall:3"""


class FaultKind(StrEnum):
    OK = "ok"
    STATUS = "status"
    TIMEOUT = "timeout"
    RESET = "reset"
    CUT = "cut"
    SLOW = "slow"
    STALL = "stall"
    LIMIT = "limit"
    EMPTY = "empty"
    REFUSAL = "refusal"
    BLOCKED = "blocked"
    OVERFLOW = "overflow"
    QUOTA = "quota"


_KEYWORDS: dict[str, FaultKind] = {
    kind.value: kind
    for kind in FaultKind
    if kind not in (FaultKind.STATUS, FaultKind.CUT, FaultKind.SLOW, FaultKind.STALL)
}


@record
class Step:
    """One spec: what happens, and to how many calls in a row (None = every call)."""

    kind: FaultKind
    times: int | None = None
    status: int | None = None  # STATUS only
    tokens: int = 0  # CUT and STALL: text deltas sent before the drop or the silence
    retry_after: float | None = None  # seconds; STATUS only
    delay: float = 0.0  # SLOW only: seconds before the first text (or the response)

    def __str__(self) -> str:
        if self.kind is FaultKind.STATUS:
            what = str(self.status)
        elif self.kind in (FaultKind.CUT, FaultKind.STALL):
            what = f"{self.kind}:{self.tokens}"
        elif self.kind is FaultKind.SLOW:
            what = f"slow:{format_delay(self.delay)}"
        else:
            what = self.kind.value
        count = "" if self.times is None else f"x{self.times}"
        delay = "" if self.retry_after is None else "@" + format_delay(self.retry_after)
        return what + count + delay


@record
class Fault:
    """A deployment's schedule of faults: steps applied one call after another."""

    steps: tuple[Step, ...]

    def at(self, call: int) -> Step | None:
        """What the `call`-th call (from 1) gets; None = a normal answer."""
        left = call
        for step in self.steps:
            if step.times is None or left <= step.times:
                return None if step.kind is FaultKind.OK else step
            left -= step.times
        return None

    def then(self, other: Fault) -> Fault:
        """This schedule followed by `other` (a second `--fail` for the same name)."""
        return _checked(self.steps + other.steps)

    def __str__(self) -> str:
        return ",".join(str(s) for s in self.steps)


def format_delay(seconds: float) -> str:
    """A delay as the grammar writes it: `2s`, `500ms`, `1.5s`."""
    if seconds == int(seconds) and seconds >= 1:
        return f"{int(seconds)}s"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:g}s"


def _bad(text: str, problem: str) -> ValueError:
    return ValueError(f"bad fault {text!r}: {problem}\n{GRAMMAR}")


def parse_fault(text: str) -> tuple[str, Fault]:
    """Parse one `--fail` value, `NAME=SPEC[,SPEC...]`; a ValueError says what is wrong."""
    name, eq, specs = text.partition("=")
    name = name.strip()
    if not eq:
        raise _bad(text, "missing '=': write NAME=SPEC, e.g. primary=429x3")
    if not name:
        raise _bad(text, "no deployment name before '='")
    parts = [p.strip() for p in specs.split(",")]
    if not any(parts):
        raise _bad(text, f"no spec after '{name}='")
    if "" in parts:
        raise _bad(text, "an empty spec between commas")
    try:
        return name, _checked(tuple(_parse_step(p) for p in parts))
    except ValueError as problem:
        raise _bad(text, str(problem)) from None


def parse_faults(texts: Iterable[str]) -> dict[str, Fault]:
    """Parse every `--fail`; a name given twice gets both schedules, in order."""
    faults: dict[str, Fault] = {}
    for text in texts:
        name, fault = parse_fault(text)
        try:
            faults[name] = faults[name].then(fault) if name in faults else fault
        except ValueError as problem:
            raise _bad(text, str(problem)) from None
    return faults


def _checked(steps: tuple[Step, ...]) -> Fault:
    for step, later in itertools.pairwise(steps):
        if step.times is None:
            raise ValueError(
                f"'{step}' applies to every call, so '{later}' after it would never happen"
                f" (give it a count, e.g. '{step}x2')"
            )
    return Fault(steps)


_COUNT = re.compile(r"(?P<what>.*?)x(?P<count>\d+|\*)", re.IGNORECASE)
_DELAY = re.compile(r"(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|s)", re.IGNORECASE)
_CUT = re.compile(r"(?P<what>cut|stall):?(?P<n>\d+)", re.IGNORECASE)


def _parse_step(spec: str) -> Step:
    head, at, delay_text = spec.partition("@")
    retry_after = _parse_delay(delay_text) if at else None
    times: int | None = None
    counted = _COUNT.fullmatch(head)
    if counted:
        head = counted["what"]
        if counted["count"] != "*":
            times = int(counted["count"])
            if times < 1:
                raise ValueError(f"the count in '{spec}' must be at least 1 (or * for every call)")
    what = head.strip().lower()
    if not what:
        raise ValueError(f"'{spec}' says how many times but not what (e.g. 429x3)")
    if what.isdigit():
        status = int(what)
        if not 400 <= status <= 599:
            raise ValueError(f"'{what}' is not an HTTP error status (400-599)")
        return Step(FaultKind.STATUS, times, status=status, retry_after=retry_after)
    if retry_after is not None:
        raise ValueError(f"a Retry-After ('@{delay_text}') only goes after an HTTP status")
    cut = _CUT.fullmatch(what)
    if cut:
        return Step(FaultKind(cut["what"]), times, tokens=int(cut["n"]))
    if what.startswith("cut"):
        raise ValueError(f"'{what}' needs the number of deltas before the cut, e.g. cut:5")
    if what.startswith("stall"):
        raise ValueError(f"'{what}' needs the number of deltas before the stall, e.g. stall:3")
    if what.startswith("slow"):
        _, colon, duration = what.partition(":")
        if not colon or not duration:
            raise ValueError(f"'{what}' needs how long the first token takes, e.g. slow:12s")
        return Step(FaultKind.SLOW, times, delay=_parse_delay(duration, what))
    if what in _KEYWORDS:
        return Step(_KEYWORDS[what], times)
    close = difflib.get_close_matches(what, [*_KEYWORDS, "cut:N", "stall:N", "slow:12s"], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ValueError(f"unknown fault '{what}'{hint}")


def _parse_delay(text: str, spec: str | None = None) -> float:
    match = _DELAY.fullmatch(text.strip())
    if not match:
        if spec is not None:
            raise ValueError(f"'{spec}': '{text}' is not a duration: give a unit, e.g. 12s")
        raise ValueError(f"'@{text}' is not a delay: write it with a unit, e.g. @2s or @500ms")
    value = float(match["value"])
    return value / 1000 if match["unit"].lower() == "ms" else value


def check_names(faults: Mapping[str, Fault], deployments: Iterable[Deployment]) -> None:
    """Reject a fault aimed at a deployment the config lacks, or at an offline one."""
    by_name = {d.name: d for d in deployments}
    for name in faults:
        deployment = by_name.get(name)
        if deployment is None:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            known = ", ".join(by_name) or "none"
            raise ValueError(
                f"--fail names '{name}', which is not a deployment in this config{hint};"
                f" deployments: {known}"
            )
        if deployment.provider is ProviderKind.LOCAL:
            raise ValueError(
                f"--fail names '{name}', a local deployment: it makes no HTTP calls,"
                " so there is nothing to break"
            )
