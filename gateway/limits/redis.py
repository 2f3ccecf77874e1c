"""Allowances in Redis: every process on every machine that names the server draws from
one ledger, on the server's clock (`TIME` inside the script: machines whose clocks
disagree still book the same seconds).

Keys, under `state.prefix`:

    <prefix>:limit:<name>    a hash: `r` and `t`, when the request and token buckets are
                             next empty (epoch s), and `R` and `T`, the provider's own
                             limits a minute as its headers stated them, and `Q`,
                             until when a first call answered without them leaves
                             it unheld (`rules.cold`); expires once both buckets are
                             empty
    <prefix>:held:<name>     a sorted set: the calls in flight, each ticket scored with
                             the time its slot frees itself (a cold allowance's first
                             call among them)
    <prefix>:retries:<name>  a hash: a deployment's recent first calls and retries, and
                             when they were counted (the retry budget)

A draw is one round trip: one script (`DRAW`, registered once and called by its SHA
through redis-py's Script object, which loads it again only if the server lost it) judges
every allowance the call needs and takes its place in all of them or in none. The
arithmetic is `gateway.limits.rules`', line for line.

The limits share the state store's connection and its fate: a Redis that is down costs
one timeout and the store's one warning, and the process then keeps to its own share of
each limit (`limits.fleet_size`) in memory for the rest of the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from gateway.limits import rules
from gateway.limits.memory import MemoryAllowance
from gateway.limits.records import Bound, Claim, Grant, Tightening, Use
from gateway.state.redis import DEFAULT_PREFIX, RedisStore, trouble

Warn = Callable[[str], None]

_CLOCK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# A refusal's limit, named in the script by its `Bound` member's name (`local RPM, ... =
# 'rpm', ...`): the enum is the one place its values are spelled. None holds a quote.
_BOUNDS = "local {} = {}\n".format(
    ", ".join(b.name for b in Bound), ", ".join(f"'{b.value}'" for b in Bound)
)

# `rules.cold`: a limit hash's fields R, T, Q (HMGET) say nothing of the provider's yet.
_COLD = """
local function unstated(v)
  return (tonumber(v[1]) or 0) <= 0 and (tonumber(v[2]) or 0) <= 0 and (tonumber(v[3]) or 0) <= now
end
"""

# KEYS: per claim its limit hash and held set; then the tally hash, if the draw counts a
# first call. ARGV: most_wait, ticket, hold, n, burst, poll, margin, the longest a cold
# allowance's first call holds it (`rules.FIRST_CALL_S`), then per claim rpm, tpm,
# concurrent (0: no such limit), tokens and stated (1: it may start slow); then the retry
# window. Returns {granted, wait, the blocking claim's number (0: none) and its limit (a
# `Bound`'s value), which claims were taken: a 1 or 0 each}.
DRAW = (
    _CLOCK
    + _COLD
    + _BOUNDS
    + """
local most, ticket, hold, n = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local burst, poll, margin = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local first_s = tonumber(ARGV[8])
local wait, blocking, bound, full = 0, 0, '', false
local function gcra_wait(at, rate, cost)
  local interval = 60 / rate
  local tolerance = math.max(interval, burst)
  local start = math.max(at, now)
  return math.max(0, start + math.min(cost * interval, tolerance) - tolerance - now)
end
local function gcra_take(at, rate, cost)
  return math.max(at, now + margin) + cost * 60 / rate
end
local function lowest(configured, stated)
  if stated <= 0 then return configured end
  if configured <= 0 then return stated end
  return math.min(configured, stated)
end
local seen, taken = {}, ''
for i = 1, n do
  local a = 8 + (i - 1) * 5
  local rpm, tpm = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local conc, tokens = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local v = redis.call('HMGET', KEYS[2 * i - 1], 'r', 't', 'R', 'T', 'Q')
  local r, t = tonumber(v[1]) or 0, tonumber(v[2]) or 0
  local cold = ARGV[a + 5] == '1' and unstated({v[3], v[4], v[5]})
  rpm, tpm = lowest(rpm, tonumber(v[3]) or 0), lowest(tpm, tonumber(v[4]) or 0)
  seen[i] = {r, t, rpm, tpm, conc, tokens, cold}
  taken = taken .. ((rpm > 0 or tpm > 0 or conc > 0 or cold) and '1' or '0')
  if cold then
    redis.call('ZREMRANGEBYSCORE', KEYS[2 * i], '-inf', now)
    local first = redis.call('ZRANGE', KEYS[2 * i], 0, 0, 'WITHSCORES')
    if #first > 0 then
      local freed = math.max(0, tonumber(first[2]) - now)
      full, wait = true, math.max(wait, math.min(freed, poll))
      blocking, bound = i, FIRST_CALL
    end
  end
  if rpm > 0 then
    local w = gcra_wait(r, rpm, 1)
    if w > wait then wait, blocking, bound = w, i, RPM end
  end
  if tpm > 0 then
    local w = gcra_wait(t, tpm, tokens)
    if w > wait then wait, blocking, bound = w, i, TPM end
  end
  if conc > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2 * i], '-inf', now)
    if redis.call('ZCARD', KEYS[2 * i]) >= conc then
      local first = redis.call('ZRANGE', KEYS[2 * i], 0, 0, 'WITHSCORES')
      local freed = math.max(0, tonumber(first[2]) - now)
      full, wait = true, math.max(wait, math.min(freed, poll))
      blocking, bound = i, CONCURRENT
    end
  end
end
if full or wait > most then return {0, string.format('%.17g', wait), blocking, bound, taken} end
for i = 1, n do
  local r, t, rpm, tpm, conc, tokens, cold = unpack(seen[i])
  if rpm > 0 then r = gcra_take(r, rpm, 1) end
  if tpm > 0 then t = gcra_take(t, tpm, tokens) end
  if rpm > 0 or tpm > 0 then
    redis.call('HSET', KEYS[2 * i - 1], 'r', string.format('%.17g', r), 't',
      string.format('%.17g', t))
    redis.call('PEXPIRE', KEYS[2 * i - 1], math.ceil((math.max(r, t) - now + 60) * 1000))
  end
  if conc > 0 then
    redis.call('ZADD', KEYS[2 * i], now + wait + hold, ticket)
    redis.call('PEXPIRE', KEYS[2 * i], math.ceil((wait + hold) * 1000) + 1000)
  elseif cold then
    redis.call('ZADD', KEYS[2 * i], now + wait + math.min(hold, first_s), ticket)
    redis.call('PEXPIRE', KEYS[2 * i], math.ceil((wait + math.min(hold, first_s)) * 1000) + 1000)
  end
end
if #KEYS > 2 * n then
  local window = tonumber(ARGV[9 + n * 5])
  local v = redis.call('HMGET', KEYS[#KEYS], 'requests', 'retries', 'at')
  local f = math.exp(-math.max(0, now - (tonumber(v[3]) or now)) / window)
  redis.call('HSET', KEYS[#KEYS], 'requests', string.format('%.17g', (tonumber(v[1]) or 0) * f + 1),
    'retries', string.format('%.17g', (tonumber(v[2]) or 0) * f), 'at', string.format('%.17g', now))
  redis.call('PEXPIRE', KEYS[#KEYS], math.ceil(window * 10000))
end
return {1, string.format('%.17g', wait), blocking, bound, taken}
"""
)

# KEYS: per claim its limit hash and held set; then the limit hash the provider's headers
# tighten, if they do. ARGV: ticket, n, answered (1: the provider answered), quiet, then
# per claim tpm (0: none), the tokens to give back (negative: taken beyond the
# reservation) and stated (1: it may start slow); then, with that hash, for requests
# and then tokens: how far ahead of now its bucket is booked at least, and the limit it
# is read against (`Tightening`).
SETTLE = (
    _CLOCK
    + _COLD
    + """
local ticket, n = ARGV[1], tonumber(ARGV[2])
local answered, quiet = ARGV[3] == '1', tonumber(ARGV[4])
for i = 1, n do
  local a = 4 + (i - 1) * 3
  local tpm, back = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  if answered and ARGV[a + 3] == '1' then
    if unstated(redis.call('HMGET', KEYS[2 * i - 1], 'R', 'T', 'Q')) then
      redis.call('HSET', KEYS[2 * i - 1], 'Q', string.format('%.17g', now + quiet))
      redis.call('PEXPIRE', KEYS[2 * i - 1], math.ceil((quiet + 60) * 1000))
    end
  end
  if back ~= 0 and redis.call('EXISTS', KEYS[2 * i - 1]) == 1 then
    local stated = tonumber(redis.call('HGET', KEYS[2 * i - 1], 'T')) or 0
    if stated > 0 and (tpm <= 0 or stated < tpm) then tpm = stated end
    if tpm > 0 then
      redis.call('HINCRBYFLOAT', KEYS[2 * i - 1], 't', string.format('%.17g', -back * 60 / tpm))
    end
  end
  redis.call('ZREM', KEYS[2 * i], ticket)
end
if #KEYS > 2 * n then
  local a = 4 + 3 * n
  local ra, rr = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local ta, tr = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local v = redis.call('HMGET', KEYS[#KEYS], 'r', 't')
  local r = math.max(tonumber(v[1]) or 0, now + ra)
  local t = math.max(tonumber(v[2]) or 0, now + ta)
  redis.call('HSET', KEYS[#KEYS], 'r', string.format('%.17g', r), 't', string.format('%.17g', t))
  if rr > 0 then redis.call('HSET', KEYS[#KEYS], 'R', string.format('%.17g', rr)) end
  if tr > 0 then redis.call('HSET', KEYS[#KEYS], 'T', string.format('%.17g', tr)) end
  redis.call('PEXPIRE', KEYS[#KEYS], math.ceil((math.max(r, t) - now + 60) * 1000))
end
return 1
"""
)

# KEYS: the tally hash. ARGV: share, the retries always allowed, the window. 1: retry.
RETRY = (
    _CLOCK
    + """
local share, least, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'requests', 'retries', 'at')
local f = math.exp(-math.max(0, now - (tonumber(v[3]) or now)) / window)
local requests, retries = (tonumber(v[1]) or 0) * f, (tonumber(v[2]) or 0) * f
if retries + 1 > math.max(least, share * requests) then return 0 end
redis.call('HSET', KEYS[1], 'requests', string.format('%.17g', requests),
  'retries', string.format('%.17g', retries + 1), 'at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(window * 10000))
return 1
"""
)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisAllowance:
    """The limits beside the cooldowns of `store`: its connection, and its fate (a Redis
    that failed for one has failed for both, with the store's one warning)."""

    def __init__(self, store: RedisStore, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._store = store
        self._prefix = prefix
        self._client: Any = None
        self._scripts: dict[str, Any] = {}
        self._alone: MemoryAllowance | None = None

    @property
    def _local(self) -> MemoryAllowance | None:
        """This run's own share of each limit, once Redis failed (None: it has not)."""
        if self._alone is None and self._store.down:
            self._alone = MemoryAllowance(alone=True)
        return self._alone

    def _redis(self) -> Any:
        client = self._store.client()
        if client is not self._client:  # registered once per connection, called by SHA
            # The scripts before the client: a thread (`batch` draws from several) that
            # sees the new client finds its scripts already there.
            self._scripts = {
                "draw": client.register_script(DRAW),
                "settle": client.register_script(SETTLE),
                "retry": client.register_script(RETRY),
            }
            self._client = client
        return client

    def _failed(self, exc: BaseException) -> MemoryAllowance:
        self._store.give_up(exc)
        local = self._local
        assert local is not None
        return local

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}:{kind}:{name}"

    def _keys(self, claims: Sequence[Claim]) -> list[str]:
        return [k for c in claims for k in (self._key("limit", c.name), self._key("held", c.name))]

    def draw(
        self,
        claims: Sequence[Claim],
        *,
        now: float,
        most_wait: float,
        hold: float,
        count: str | None = None,
    ) -> Grant:
        if self._local is not None:
            return self._local.draw(claims, now=now, most_wait=most_wait, hold=hold, count=count)
        ticket = os.urandom(8).hex()
        keys = self._keys(claims)
        if count is not None:
            keys.append(self._key("retries", count))
        args: list[object] = [
            repr(max(0.0, most_wait)),
            ticket,
            repr(hold),
            len(claims),
            repr(rules.BURST_S),
            repr(rules.SLOT_POLL_S),
            repr(rules.MARGIN_S),
            repr(rules.FIRST_CALL_S),
        ]
        for c in claims:
            limits = c.limits
            args += [limits.rpm or 0, limits.tpm or 0, limits.concurrent or 0, c.tokens]
            args.append(int(c.stated))
        args.append(repr(rules.RETRY_WINDOW_S))
        try:
            self._redis()
            granted, wait, blocking, bound, taken = self._scripts["draw"](keys=keys, args=args)
        except trouble() as exc:
            return self._failed(exc).draw(
                claims, now=now, most_wait=most_wait, hold=hold, count=count
            )
        number = int(blocking)
        name, by = (claims[number - 1].name, Bound(_text(bound))) if number else ("", None)
        if not int(granted):
            return Grant(False, float(_text(wait)), name, by)
        mine = tuple(c for c, bit in zip(claims, _text(taken), strict=True) if bit == "1")
        return Grant(True, float(_text(wait)), name, by, ticket, mine)

    def settle(
        self,
        grant: Grant,
        *,
        used: int | None,
        now: float,
        tightening: Tightening | None = None,
        answered: bool = False,
    ) -> None:
        if self._local is not None:
            self._local.settle(grant, used=used, now=now, tightening=tightening, answered=answered)
            return
        claims = grant.claims if grant.granted else ()
        if not claims and tightening is None:
            return
        keys = self._keys(claims)
        args: list[object] = [grant.ticket, len(claims), int(answered), repr(rules.QUIET_S)]
        for c in claims:
            args += [c.limits.tpm or 0, 0 if used is None else c.tokens - used, int(c.stated)]
        if tightening is not None:
            keys.append(self._key("limit", tightening.name))
            args += [repr(v) for v in tightening[1:]]
        try:
            self._redis()
            self._scripts["settle"](keys=keys, args=args)
        except trouble() as exc:
            self._failed(exc)

    def retry(self, name: str, *, share: float, now: float) -> bool:
        if self._local is not None:
            return self._local.retry(name, share=share, now=now)
        try:
            self._redis()
            allowed = self._scripts["retry"](
                keys=[self._key("retries", name)],
                args=[repr(share), repr(rules.MIN_RETRIES), repr(rules.RETRY_WINDOW_S)],
            )
        except trouble() as exc:
            return self._failed(exc).retry(name, share=share, now=now)
        return bool(int(allowed))

    def usage(self, claims: Sequence[Claim], now: float) -> list[Use]:
        if self._local is not None:
            return self._local.usage(claims, now)
        try:
            pipe = self._redis().pipeline(transaction=False)
            pipe.time()
            for c in claims:
                pipe.hmget(self._key("limit", c.name), "r", "t", "R", "T")
                pipe.zrange(self._key("held", c.name), 0, -1, withscores=True)
            server, *values = pipe.execute()
        except trouble() as exc:
            return self._failed(exc).usage(claims, now)
        at = float(server[0]) + float(server[1]) / 1e6
        out: list[Use] = []
        for i, c in enumerate(claims):
            (r, t, rr, tr), held = values[2 * i], values[2 * i + 1]
            out.append(
                Use(
                    c.name,
                    c.limits,
                    rules.ahead(float(r or 0), at),
                    rules.ahead(float(t or 0), at),
                    sum(1 for _, until in held if until > at),
                    float(rr or 0),
                    float(tr or 0),
                )
            )
        return out
