"""The state in Redis: shared by every invocation on every machine that names the server.

Keys, under `state.prefix` (default `support-ask`):

    <prefix>:salt          the salt of key fingerprints, created once (SET NX)
    <prefix>:cool:<name>   one cooldown record (the file store's JSON), with a TTL of
                           its time left plus the probe window (PX, from the writer's
                           clock: a server whose clock is off changes nothing)
    <prefix>:lease:<name>  the probe's lease, "<until> <holder>", taken like SET NX PX
    <prefix>:cursor:<name> a round-robin cursor (INCR)

`<name>` is a deployment's name, or `key:DEPLOYMENT/VARIABLE` for one of its keys. A
question that goes well costs one round trip: one pipeline reading the salt, every record
and every lease (and moving the round-robin cursors on). A cooldown is written by a Lua
script that runs the same rule as `rules.merge` on the server, so two machines racing keep
the longer one.

Redis is a help, never a risk: connect and command timeouts are short, nothing is
retried, and on the first error the store says so once and carries on for the rest of the
run in the local file store (`fallback`). The URL's password is never in any message.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from gateway.config.location import RedisURL
from gateway.model import Cooldown, CooldownBasis, ErrorKind
from gateway.secrets.key import Secret
from gateway.secrets.shapes import PLACEHOLDER, url_passwords
from gateway.state import codec, rules
from gateway.state.records import DEFAULT_BOUNDS, Lease, Snapshot, State, StateBounds

if TYPE_CHECKING:
    from gateway.seams import StateStore

Warn = Callable[[str], None]

DEFAULT_PREFIX = "support-ask"
DEFAULT_TIMEOUT = 0.25  # seconds: a loopback or same-zone Redis answers in about 1 ms

# rules.merge, on the server. KEYS: the record, its lease. ARGV: now, until, cap, remember
# (seconds), the new record as JSON (without until, trips and basis: the script decides
# them), its basis. Returns 1 when it wrote, 0 when the old one stands.
MERGE = """
local now, untl = tonumber(ARGV[1]), tonumber(ARGV[2])
local cap, remember = tonumber(ARGV[3]), tonumber(ARGV[4])
local new = cjson.decode(ARGV[5])
local basis = ARGV[6]
if untl > now + cap then untl, basis = now + cap, 'capped' end
if untl <= now then return 0 end
local trips = 1
local raw = redis.call('GET', KEYS[1])
local ok, old = false, nil
if raw then ok, old = pcall(cjson.decode, raw) end
if ok and type(old) == 'table' and type(old['until']) == 'number'
    and type(old.started) == 'number' and type(old.trips) == 'number'
    and (old.credential == cjson.null or old.credential == new.credential) then
  if old['until'] > now then
    if old['until'] >= untl then return 0 end
    trips = old.trips
  else
    local doubled = math.min(cap, 2 * (old['until'] - old.started))
    if now + doubled > untl then untl, basis = now + doubled, 'escalated' end
    trips = old.trips + 1
  end
end
-- The record is ARGV[5] with the deadline, trips and basis added as text: cjson would
-- write numbers with 14 digits, and an epoch time needs 17 to come back the same.
local record = string.sub(ARGV[5], 1, -2) .. string.format(
  ',"until":%.17g,"trips":%d,"basis":"%s"}', untl, trips, basis)
redis.call('SET', KEYS[1], record, 'PX', math.ceil((untl + remember - now) * 1000))
redis.call('DEL', KEYS[2])
return 1
"""

# The probe's lease: SET NX PX, except that a lease whose deadline (kept in its value,
# "<until> <holder>") has passed on the caller's clock is free too, so every store keeps
# the same time. KEYS: the lease. ARGV: now, until, ttl in ms, holder. 1 when taken.
LEASE = """
local held = redis.call('GET', KEYS[1])
if held then
  local untl = tonumber(string.match(held, '^(%S+)'))
  if untl and untl > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2] .. ' ' .. ARGV[4], 'PX', ARGV[3])
return 1
"""


class RedisStore:
    def __init__(
        self,
        location: RedisURL,
        *,
        fallback: Callable[[], StateStore],
        warn: Warn | None = None,
        prefix: str = DEFAULT_PREFIX,
        connect_timeout: float = DEFAULT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
        limits: StateBounds = DEFAULT_BOUNDS,
        known: Collection[str] | None = None,
        read_only: bool = False,
    ) -> None:
        self.location = location
        self.limits = limits
        self.read_only = read_only
        self._prefix = prefix
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._fallback = fallback
        self._known = None if known is None else frozenset(known)
        self._warn: Warn = warn or logging.getLogger("support_ask.state").warning
        self._client: Any = None
        self._merge: Any = None
        self._lease: Any = None
        self._salt: str | None = None
        self._local: StateStore | None = None  # set once Redis failed: this run's store
        self._holder = os.urandom(8).hex()

    # -- the connection, and what happens when it fails

    def _redis(self) -> Any:
        if self._client is None:
            self._client = connect(self.location, self._connect_timeout, self._timeout)
            self._merge = self._client.register_script(MERGE)
            self._lease = self._client.register_script(LEASE)
        return self._client

    def _failed(self, exc: BaseException) -> StateStore:
        """Switch this run to the local file store, saying so once."""
        if self._local is None:
            why = reason(exc, self.location)
            self._local = self._fallback()
            where = getattr(self._local, "path", "the local state")
            self._warn(
                f"state: Redis at {self.location.shown} is not usable ({why}); this run "
                f"keeps its cooldowns in the local file {where}, and to its own share of "
                "each shared limit (limits.fleet_size)"
            )
            self.close()
        return self._local

    # -- what the fleet's limits share with it (`gateway.limits.redis`): one connection,
    # and one fate, so a Redis that is down costs one timeout and one warning

    @property
    def down(self) -> bool:
        """Whether this run gave Redis up (its cooldowns are in the local file)."""
        return self._local is not None

    def client(self) -> Any:
        """The connection, made on first use; raises what `trouble()` names."""
        return self._redis()

    def give_up(self, exc: BaseException) -> None:
        """Redis failed for the limits: this run gives it up for the cooldowns too."""
        self._failed(exc)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(*trouble()):  # a broken connection may not close cleanly
                client.close()

    def check(self) -> str | None:
        """None when the server answers a PING; else why not (for `config check`)."""
        try:
            self._redis().ping()
        except trouble() as exc:
            return reason(exc, self.location)
        return None

    # -- keys

    def _key(self, kind: str, name: str = "") -> str:
        return f"{self._prefix}:{kind}:{name}" if name else f"{self._prefix}:{kind}"

    def _names(self, credentials: Mapping[str, Secret | None]) -> list[str] | None:
        """The records a question reads: every name its config can have (None: not known,
        so everything under the prefix is read, as a listing does)."""
        if self._known is None:
            return None
        return sorted(set(credentials) | self._known)

    # -- the protocol

    def read(
        self,
        now: float,
        credentials: Mapping[str, Secret | None],
        *,
        advance: Collection[str] = (),
    ) -> Snapshot:
        if self._local is not None:
            return self._local.read(now, credentials, advance=advance)
        try:
            client = self._redis()
            names = self._names(credentials)
            if names is None:
                names = self._scan(client, "cool") + self._scan(client, "lease")
                names = sorted(set(names))
            pipe = client.pipeline(transaction=False)
            pipe.mget(
                [self._key("salt")]
                + [self._key("cool", n) for n in names]
                + [self._key("lease", n) for n in names]
            )
            for name in advance:
                pipe.incr(self._key("cursor", name))
            values, *cursors = pipe.execute()
        except trouble() as exc:
            return self._failed(exc).read(now, credentials, advance=advance)
        salt = _text(values[0])
        self._salt = salt or self._salt
        records, leases = values[1 : 1 + len(names)], values[1 + len(names) :]
        state = State(
            salt,
            self._entries(zip(names, records, strict=True)),
            dict(_leases(zip(names, leases, strict=True))),
            {name: int(value) - 1 for name, value in zip(advance, cursors, strict=True)},
        )
        return rules.snapshot(state, now, credentials, self.limits, cursors=advance)

    def active(self, now: float, credentials: Mapping[str, Secret | None]) -> dict[str, Cooldown]:
        return dict(self.read(now, credentials).cooling)

    def entries(self) -> list[Cooldown]:
        if self._local is not None:
            return self._local.entries()
        try:
            client = self._redis()
            names = self._scan(client, "cool")
            values = client.mget([self._key("cool", n) for n in names]) if names else []
        except trouble() as exc:
            return self._failed(exc).entries()
        pairs = zip(names, values, strict=True)
        return sorted(self._entries(pairs).values(), key=lambda c: c.name)

    def cool(
        self,
        name: str,
        *,
        until: float,
        kind: ErrorKind,
        now: float,
        status: int | None = None,
        code: str | None = None,
        basis: CooldownBasis = CooldownBasis.POLICY,
        deployment: str | None = None,
        credential: Secret | None = None,
        cap: float | None = None,
    ) -> None:
        def elsewhere(store: StateStore) -> None:
            store.cool(
                name,
                until=until,
                kind=kind,
                now=now,
                status=status,
                code=code,
                basis=basis,
                deployment=deployment,
                credential=credential,
                cap=cap,
            )

        if self._local is not None:
            elsewhere(self._local)
            return
        if self.read_only:
            return
        limit = self.limits.max_cooldown if cap is None else min(cap, self.limits.max_cooldown)
        try:
            fingerprint = (
                None if credential is None else rules.fingerprint(credential, self._ensure_salt())
            )
            record = codec.dump(
                Cooldown(
                    name, deployment or name, until, kind, now, status, code, 1, basis, fingerprint
                )
            )
            for decided in ("until", "trips", "basis"):
                del record[decided]
            self._redis()
            self._merge(
                keys=[self._key("cool", name), self._key("lease", name)],
                args=[
                    repr(now),
                    repr(until),
                    repr(limit),
                    repr(self.limits.remember),
                    json.dumps(record),
                    str(basis),
                ],
            )
        except trouble() as exc:
            elsewhere(self._failed(exc))

    def clear(self, name: str | None = None) -> None:
        if self._local is not None:
            self._local.clear(name)
            return
        if self.read_only:
            return
        try:
            client = self._redis()
            if name is not None:
                client.delete(self._key("cool", name), self._key("lease", name))
                return
            for kind in ("cool", "lease"):
                keys = list(client.scan_iter(match=self._key(kind, "*"), count=500))
                if keys:
                    client.delete(*keys)
        except trouble() as exc:
            self._failed(exc).clear(name)

    def lease(self, name: str, *, now: float, ttl: float) -> bool:
        if self._local is not None:
            return self._local.lease(name, now=now, ttl=ttl)
        try:
            self._redis()
            taken = self._lease(
                keys=[self._key("lease", name)],
                args=[repr(now), repr(now + ttl), max(1, round(ttl * 1000)), self._holder],
            )
        except trouble() as exc:
            return self._failed(exc).lease(name, now=now, ttl=ttl)
        return bool(taken)

    # -- helpers

    def _scan(self, client: Any, kind: str) -> list[str]:
        """The names of every `kind` record under the prefix (SCAN: for listings)."""
        start = len(f"{self._prefix}:{kind}:")
        return [_text(k)[start:] for k in client.scan_iter(match=self._key(kind, "*"), count=500)]

    def _ensure_salt(self) -> str:
        """The fleet's salt: made by whoever needs it first, then the same for everyone."""
        if self._salt is None:
            pipe = self._redis().pipeline(transaction=False)
            pipe.set(self._key("salt"), rules.new_salt(), nx=True)
            pipe.get(self._key("salt"))
            _, salt = pipe.execute()
            self._salt = _text(salt)
        return self._salt

    def _entries(self, pairs: Iterable[tuple[str, object]]) -> dict[str, Cooldown]:
        out: dict[str, Cooldown] = {}
        for name, raw in pairs:
            if raw is None:
                continue
            try:
                out[name] = codec.load(name, json.loads(_text(raw)))
            except (ValueError, codec.BadEntry) as bad:
                # Another writer's garbage: not believed, and it expires on its own.
                self._warn(f"state: the Redis record {self._key('cool', name)} was ignored: {bad}")
        return out


def connect(location: RedisURL, connect_timeout: float, timeout: float) -> Any:
    """A client of the server at `location` that retries nothing and sends nothing until
    its first command."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        location.url.reveal(),
        socket_connect_timeout=connect_timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),  # one try: the customer's budget is not ours
        # RESP2 and no CLIENT SETINFO: connecting sends nothing (no HELLO, no SETINFO
        # round trips); a question that goes well is one MGET.
        protocol=2,
        driver_info=None,
    )


@functools.cache
def trouble() -> tuple[type[BaseException], ...]:
    """What a Redis that is down, slow, misconfigured or not installed raises: everything
    the store turns into "use the local file". A bug of ours is not among them."""
    try:
        from redis.exceptions import RedisError
    except ImportError:
        return (ImportError, OSError)
    return (RedisError, ImportError, OSError)


def _leases(pairs: Iterable[tuple[str, object]]) -> Iterator[tuple[str, Lease]]:
    for name, raw in pairs:
        until, _, holder = _text(raw).partition(" ")
        try:
            yield name, Lease(float(until), holder)
        except ValueError:
            continue  # not a lease of ours: it expires on its own


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def reason(exc: BaseException, location: RedisURL) -> str:
    """Why Redis failed, in words that never hold the URL's password."""
    name = type(exc).__name__
    if name == "ModuleNotFoundError":
        return "the redis package is not installed: pip install 'support-ask[redis]'"
    text = " ".join(str(exc).split()) or name
    if name == "TimeoutError" or "timed out" in text.lower():
        text = "it did not answer in time"
    text = text.replace(location.url.reveal(), location.shown)
    for password in url_passwords(location.url.reveal()):  # as written and as sent
        text = text.replace(password, PLACEHOLDER)
    return text
