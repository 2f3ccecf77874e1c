"""The Redis store against a real redis-server started for each test on a free loopback
port: the same rules as every store, the key schema, and what happens when Redis is
stopped, or accepts connections and never answers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.config.location import LocationError, RedisURL, parse_location
from gateway.model import ErrorKind
from gateway.secrets.key import Secret
from gateway.state.file import FileStore
from gateway.state.redis import RedisStore
from tests.support.redis_server import RedisServer, redis_server, silent_server
from tests.support.state_rules import KEY, RULE_CASES, T

PASSWORD = "hunter2-Zq8v3KxT1mN4"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def open_redis(
    url: str, tmp_path: Path, warnings: list[str] | None = None, **kw: object
) -> RedisStore:
    local = tmp_path / "local-cooldowns.json"
    sink = warnings.append if warnings is not None else pytest.fail
    return RedisStore(
        RedisURL.parse(url),
        fallback=lambda: FileStore(local, warn=sink),
        warn=sink,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda c: c.__name__)
def test_the_rules_hold_in_redis(
    server: RedisServer, tmp_path: Path, case: Callable[[RedisStore], None]
) -> None:
    case(open_redis(server.url, tmp_path))


def test_the_key_schema(server: RedisServer, tmp_path: Path) -> None:
    store = open_redis(server.url, tmp_path, prefix="team-a")
    now = time.time()
    store.cool(
        "key:OPENAI_API_KEY",
        until=now + 60,
        kind=ErrorKind.QUOTA,
        now=now,
        status=429,
        code="insufficient_quota",
        deployment="primary",
        credential=KEY,
    )
    assert store.lease("fallback", now=now, ttl=5)
    store.read(now, {}, advance=["primary"])
    client = server.client()
    keys = sorted(k.decode() for k in client.keys("*"))  # type: ignore[attr-defined]
    assert keys == [
        "team-a:cool:key:OPENAI_API_KEY",
        "team-a:cursor:primary",
        "team-a:lease:fallback",
        "team-a:salt",
    ]
    record = json.loads(client.get("team-a:cool:key:OPENAI_API_KEY"))  # type: ignore[attr-defined]
    salt = client.get("team-a:salt").decode()  # type: ignore[attr-defined]
    assert record == {
        "until": pytest.approx(now + 60),
        "kind": "quota",
        "started": pytest.approx(now),
        "trips": 1,
        "basis": "policy",
        "status": 429,
        "code": "insufficient_quota",
        "credential": KEY.fingerprint(bytes.fromhex(salt)),
        "deployment": "primary",
    }
    ttl = client.pttl("team-a:cool:key:OPENAI_API_KEY") / 1000  # type: ignore[attr-defined]
    assert 60 + 3600 - 2 < ttl <= 60 + 3600, "expires at its deadline plus the probe window"
    assert 0 < client.pttl("team-a:lease:fallback") <= 5000  # type: ignore[attr-defined]
    assert KEY.reveal().encode() not in b"".join(
        client.dump(k) or b""
        for k in client.keys("*")  # type: ignore[attr-defined]
    )


def test_two_prefixes_share_a_server_without_seeing_each_other(
    server: RedisServer, tmp_path: Path
) -> None:
    a = open_redis(server.url, tmp_path, prefix="team-a")
    b = open_redis(server.url, tmp_path, prefix="team-b")
    a.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert list(a.active(T, {})) == ["primary"] and b.active(T, {}) == {}
    b.clear()
    assert list(a.active(T, {})) == ["primary"]


def test_a_garbage_record_is_ignored_with_a_warning_and_the_others_kept(
    server: RedisServer, tmp_path: Path
) -> None:
    warnings: list[str] = []
    store = open_redis(server.url, tmp_path, warnings)
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    client = server.client()
    client.set("support-ask:cool:fallback", b'{"until": NaN, "kind": "server"}')  # type: ignore[attr-defined]
    assert list(store.active(T, {"fallback": None})) == ["primary"]
    assert "support-ask:cool:fallback" in warnings[0]
    # The script refuses to build on it too: the new cooldown replaces it.
    store.cool("fallback", until=T + 30, kind=ErrorKind.SERVER, now=T)
    assert sorted(store.active(T, {"fallback": None})) == ["fallback", "primary"]


def test_a_stopped_redis_falls_back_to_the_local_file_with_one_warning(
    server: RedisServer, tmp_path: Path
) -> None:
    warnings: list[str] = []
    store = open_redis(server.url, tmp_path, warnings)
    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    server.stop()

    started = time.monotonic()
    assert store.active(T, {}) == {}, "the local file knows nothing of Redis' cooldowns"
    store.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert list(store.active(T, {})) == ["fallback"]
    assert store.lease("x", now=T, ttl=5)
    assert time.monotonic() - started < 1.0

    (warning,) = warnings
    assert f"Redis at redis://127.0.0.1:{server.port}/0 is not usable" in warning
    assert str(tmp_path / "local-cooldowns.json") in warning
    local = FileStore(tmp_path / "local-cooldowns.json")
    assert [c.name for c in local.entries()] == ["fallback"], "taken while down: in the file"

    server.start()
    again = open_redis(server.url, tmp_path)
    assert list(again.active(T, {})) == [], "a restarted, empty Redis: the next run uses it"
    again.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert list(again.active(T, {})) == ["primary"]


@pytest.mark.parametrize("operation", ["read", "cool", "lease", "clear", "entries"])
def test_a_redis_that_never_answers_costs_a_fraction_of_a_second_once(
    tmp_path: Path, operation: str
) -> None:
    warnings: list[str] = []
    with silent_server() as url:
        store = open_redis(url, tmp_path, warnings, connect_timeout=0.2, timeout=0.2)
        started = time.monotonic()
        calls = {
            "read": lambda: store.read(T, {"primary": None}),
            "cool": lambda: store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T),
            "lease": lambda: store.lease("primary", now=T, ttl=5),
            "clear": lambda: store.clear("primary"),
            "entries": lambda: store.entries(),
        }
        for _ in range(3):
            calls[operation]()
        took = time.monotonic() - started
    assert took < 0.6, f"{took:.2f} s: one timeout, then the local file"
    (warning,) = warnings
    assert "did not answer in time" in warning


def test_the_password_in_the_url_is_never_shown(tmp_path: Path) -> None:
    warnings: list[str] = []
    with silent_server() as url:
        secret_url = url.replace("redis://", f"redis://support:{PASSWORD}@")
        location = RedisURL.parse(secret_url)
        assert PASSWORD not in str(location) and PASSWORD not in repr(location)
        store = open_redis(secret_url, tmp_path, warnings, timeout=0.1, connect_timeout=0.1)
        store.read(T, {})
        assert store.check() is not None
    assert warnings and all(PASSWORD not in w for w in warnings)
    assert (
        PASSWORD not in (tmp_path / "local-cooldowns.json").read_text(errors="replace")
        if (tmp_path / "local-cooldowns.json").exists()
        else True
    )


def test_a_wrong_password_falls_back_and_says_why_without_it(
    tmp_path: Path, server: RedisServer
) -> None:
    server.client().config_set("requirepass", "the-real-one")  # type: ignore[attr-defined]
    warnings: list[str] = []
    wrong = server.url.replace("redis://", f"redis://:{PASSWORD}@")
    store = open_redis(wrong, tmp_path, warnings)
    assert store.active(T, {}) == {}
    (warning,) = warnings
    assert PASSWORD not in warning and "not usable" in warning


LOCATIONS = {
    "/var/lib/x.json": Path("/var/lib/x.json"),
    "redis://h:6380/2": "redis://h:6380/2",
    "rediss://user:pw@h/": "rediss://h:6379/0",
    "redis://[::1]:7000/1": "redis://[::1]:7000/1",
}


@pytest.mark.parametrize(("text", "expected"), LOCATIONS.items())
def test_a_path_selects_the_file_and_a_url_redis(text: str, expected: object) -> None:
    found = parse_location(text)
    assert (found.shown if isinstance(found, RedisURL) else found) == expected


@pytest.mark.parametrize(
    "text", ["redis://", "redis://h:99999/0", "redis://h/zero", "http://h/x", "redis://h/0?x=1"]
)
def test_a_bad_url_is_refused_naming_the_problem(text: str) -> None:
    with pytest.raises(LocationError) as caught:
        parse_location(text.replace("//", f"//u:{PASSWORD}@", 1) if text != "redis://" else text)
    assert PASSWORD not in str(caught.value)


def test_secret_is_unaffected() -> None:  # the URL is a Secret: no repr leaks it
    assert "pw" not in repr(Secret("redis://u:pw@h/0"))


def test_a_deadline_comes_back_to_the_last_digit(server: RedisServer, tmp_path: Path) -> None:
    # cjson writes numbers with 14 significant digits: an epoch time would lose its last
    # decimals, and a worker checking its own last write would see it "shortened".
    store = open_redis(server.url, tmp_path)
    now = 1_764_594_600.123456
    store.cool("primary", until=now + 60.000789, kind=ErrorKind.SERVER, now=now)
    (c,) = store.entries()
    assert (c.until, c.started) == (now + 60.000789, now)


def test_a_question_that_goes_well_is_one_command(server: RedisServer, tmp_path: Path) -> None:
    known = {"primary", "fallback", "key:OPENAI_API_KEY"}
    store = open_redis(server.url, tmp_path, known=known)
    client = server.client()

    def calls() -> int:
        stats = client.info("commandstats")  # type: ignore[attr-defined]
        return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")

    before = calls()
    seen = store.read(T, {"key:OPENAI_API_KEY": KEY})
    assert seen.cooling == {} and calls() - before == 1, "connecting sends nothing, then one MGET"


def test_under_ci_a_missing_redis_server_fails_the_redis_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    import tests.support.redis_server as helper

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI the Redis tests must run"):
        helper.redis_binary()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        helper.redis_binary()
