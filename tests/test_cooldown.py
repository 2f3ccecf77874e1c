"""Cooldown state: the rules both stores share, and what the file store does on disk."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import gateway.cooldown
from gateway.cooldown import FileStore, MemoryStore
from gateway.model import ErrorKind
from gateway.secret import Secret

ROOT = Path(__file__).resolve().parent.parent
T = 1_700_000_000.0  # the injected wall clock
KEY = Secret("sk-test-Zq8v3KxT1mN4bR7wY2cF9hJ6")
NEW_KEY = Secret("sk-test-rotated-4bR7wY2cF9hJ6Zq8")

Store = MemoryStore | FileStore


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return FileStore(tmp_path / "cooldowns.json", warn=pytest.fail)


def until_of(store: Store, name: str) -> float | None:
    found = [c.until for c in store.entries() if c.deployment == name]
    return found[0] if found else None


# -- the rules -----------------------------------------------------------------------------


def test_a_cooldown_holds_until_it_expires(store: Store) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T, detail="429 x3")
    (cooldown,) = store.active(T + 59.9, {}).values()
    assert (cooldown.deployment, cooldown.kind, cooldown.detail) == (
        "primary",
        ErrorKind.RATE_LIMIT,
        "429 x3",
    )
    assert (cooldown.started, cooldown.until) == (T, T + 60)
    assert store.active(T + 60, {}) == {}
    assert [c.deployment for c in store.entries()] == ["primary"], "expired ones still listed"


def test_a_shorter_cooldown_never_shortens_a_longer_one(store: Store) -> None:
    store.cool("primary", until=T + 300, kind=ErrorKind.QUOTA, now=T, detail="credit")
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T + 1, detail="429")
    (cooldown,) = store.active(T + 100, {}).values()
    assert (cooldown.until, cooldown.kind, cooldown.detail) == (T + 300, ErrorKind.QUOTA, "credit")


def test_a_longer_cooldown_replaces_with_its_own_kind_and_detail(store: Store) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T, detail="429")
    store.cool("primary", until=T + 600, kind=ErrorKind.SERVER, now=T + 5, detail="502")
    (cooldown,) = store.active(T + 100, {}).values()
    assert (cooldown.until, cooldown.kind, cooldown.detail, cooldown.started) == (
        T + 600,
        ErrorKind.SERVER,
        "502",
        T + 5,
    )


def test_clear_forgets_one_deployment_or_all(store: Store) -> None:
    for name in ("a", "b", "c"):
        store.cool(name, until=T + 60, kind=ErrorKind.SERVER, now=T)
    store.clear("b")
    assert sorted(store.active(T, {})) == ["a", "c"]
    store.clear("not-there")
    assert sorted(store.active(T, {})) == ["a", "c"]
    store.clear()
    assert store.active(T, {}) == {} and store.entries() == []


def test_an_auth_cooldown_ends_when_the_key_changes(store: Store) -> None:
    store.cool("primary", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    assert "primary" in store.active(T + 1, {"primary": KEY})
    assert "primary" in store.active(T + 1, {"primary": Secret(KEY.reveal())})
    assert store.active(T + 1, {"primary": NEW_KEY}) == {}, "a rotated key gets a new chance"
    assert store.active(T + 1, {"primary": None}) == {}
    assert store.active(T + 1, {}) == {}


def test_a_cooldown_without_a_credential_holds_whatever_the_key(store: Store) -> None:
    store.cool("primary", until=T + 60, kind=ErrorKind.RATE_LIMIT, now=T)
    assert "primary" in store.active(T, {"primary": NEW_KEY})
    assert "primary" in store.active(T, {"primary": None})


def test_after_a_key_rotation_a_new_shorter_cooldown_is_not_lost(store: Store) -> None:
    # The stale auth cooldown no longer holds the deployment back; the new key then hits a
    # rate limit, and that cooldown must count even though it ends sooner.
    store.cool("primary", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    store.cool("primary", until=T + 70, kind=ErrorKind.RATE_LIMIT, now=T + 10)
    (cooldown,) = store.active(T + 20, {"primary": NEW_KEY}).values()
    assert (cooldown.kind, cooldown.until) == (ErrorKind.RATE_LIMIT, T + 70)


def test_an_auth_cooldown_with_the_same_key_only_extends(store: Store) -> None:
    store.cool("primary", until=T + 3600, kind=ErrorKind.AUTH, now=T, credential=KEY)
    store.cool("primary", until=T + 60, kind=ErrorKind.AUTH, now=T + 1, credential=KEY)
    assert until_of(store, "primary") == T + 3600


def test_a_cooldown_already_over_is_not_recorded(store: Store) -> None:
    store.cool("primary", until=T - 1, kind=ErrorKind.SERVER, now=T)
    assert store.entries() == []


def test_expired_cooldowns_are_pruned_when_the_state_changes(store: Store) -> None:
    store.cool("old", until=T + 10, kind=ErrorKind.SERVER, now=T)
    store.cool("new", until=T + 100, kind=ErrorKind.SERVER, now=T + 20)
    assert [c.deployment for c in store.entries()] == ["new"]


# -- the file ------------------------------------------------------------------------------


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "cooldowns.json"


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def fstore(path: Path, warnings: list[str]) -> FileStore:
    return FileStore(path, warn=warnings.append)


def test_cooldowns_are_shared_through_the_file(path: Path) -> None:
    FileStore(path).cool("primary", until=T + 60, kind=ErrorKind.OVERLOADED, now=T, detail="529")
    (cooldown,) = FileStore(path).active(T, {}).values()
    assert (cooldown.deployment, cooldown.kind, cooldown.detail) == (
        "primary",
        ErrorKind.OVERLOADED,
        "529",
    )
    FileStore(path).clear("primary")
    assert FileStore(path).active(T, {}) == {}


def test_the_file_is_versioned_json_with_a_fingerprint_never_the_key(
    fstore: FileStore, path: Path
) -> None:
    fstore.cool("primary", until=T + 60, kind=ErrorKind.AUTH, now=T, credential=KEY, detail="401")
    fstore.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T)
    raw = path.read_bytes()
    assert KEY.reveal().encode() not in raw
    assert KEY.reveal()[8:].encode() not in raw  # not even the key's tail
    doc = json.loads(raw)
    assert doc["version"] == 1
    bytes.fromhex(doc["salt"])
    entry = doc["cooldowns"]["primary"]
    assert entry == {
        "until": T + 60,
        "kind": "auth",
        "started": T,
        "detail": "401",
        "credential": KEY.fingerprint(bytes.fromhex(doc["salt"])),
    }
    assert doc["cooldowns"]["fallback"]["credential"] is None


def test_the_salt_is_created_once(fstore: FileStore, path: Path) -> None:
    fstore.cool("a", until=T + 60, kind=ErrorKind.AUTH, now=T, credential=KEY)
    salt = json.loads(path.read_bytes())["salt"]
    FileStore(path).cool("b", until=T + 60, kind=ErrorKind.SERVER, now=T)
    FileStore(path).clear("a")
    assert json.loads(path.read_bytes())["salt"] == salt
    other = tmp = path.with_name("other.json")
    FileStore(tmp).cool("a", until=T + 60, kind=ErrorKind.AUTH, now=T, credential=KEY)
    assert json.loads(other.read_bytes())["salt"] != salt, "each file its own salt"


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)  # the modes must not depend on a strict umask
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_the_file_and_its_lock_are_private(fstore: FileStore, path: Path) -> None:
    fstore.cool("a", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.with_name("cooldowns.json.lock").stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "cooldowns.json",
        "cooldowns.json.lock",
    ], "no temporary file left behind"


def test_a_change_that_changes_nothing_writes_nothing(fstore: FileStore, path: Path) -> None:
    fstore.clear("primary")  # a success, with no state at all: not even a file appears
    fstore.clear()
    assert not path.parent.exists()

    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    before = path.stat()
    fstore.clear("fallback")
    fstore.cool("primary", until=T + 30, kind=ErrorKind.SERVER, now=T)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# Each is what a crash, a disk problem or a hand edit could leave behind.
BAD_FILES = {
    "empty": b"",
    "whitespace": b"  \n",
    "truncated": b'{"version": 1, "salt": "00ff", "cooldowns": {"primary": {"until": 17',
    "binary garbage": b"\x00\xff\xfe\x01garbage",
    "not an object": b"[1, 2, 3]",
    "wrong version": b'{"version": 2, "salt": "00ff", "cooldowns": {}}',
    "no version": b'{"salt": "00ff", "cooldowns": {}}',
    "bad salt": b'{"version": 1, "salt": "zz", "cooldowns": {}}',
    "bad kind": b'{"version": 1, "salt": "00", "cooldowns": {"a": {"until": 1, "kind": "x",'
    b' "started": 0}}}',
    "until is text": b'{"version": 1, "salt": "00", "cooldowns": {"a": {"until": "soon",'
    b' "kind": "server", "started": 0}}}',
}


@pytest.mark.parametrize("content", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_is_reported_set_aside_and_replaced(
    fstore: FileStore, path: Path, warnings: list[str], content: bytes
) -> None:
    path.parent.mkdir()
    path.write_bytes(content)

    assert fstore.active(T, {}) == {}

    (warning,) = warnings
    aside = path.with_name("cooldowns.json.corrupt")
    assert str(path) in warning and "corrupt" in warning and str(aside) in warning
    assert aside.read_bytes() == content, "the bad copy is kept for a post-mortem"
    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert json.loads(path.read_bytes())["version"] == 1
    later: list[str] = []
    assert list(FileStore(path, warn=later.append).active(T, {})) == ["primary"]
    assert later == [], "recovered: the next invocation finds a good file"
    assert len(warnings) == 1


def test_a_bad_file_met_first_by_a_write_is_recovered_too(
    fstore: FileStore, path: Path, warnings: list[str]
) -> None:
    path.parent.mkdir()
    path.write_bytes(b'{"version": 1, "sa')
    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert len(warnings) == 1 and "truncated" in warnings[0]
    assert list(FileStore(path).active(T, {})) == ["primary"]


def test_an_unreadable_file_is_reported_and_replaced(
    fstore: FileStore, path: Path, warnings: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path.parent.mkdir()
    path.write_bytes(b'{"version": 1, "salt": "00", "cooldowns": {}}')
    real_open = open

    def denying_open(file: object, *args: object, **kwargs: object) -> object:
        if Path(str(file)) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    # Root reads any file, so a chmod cannot show this in CI: the refusal is injected.
    monkeypatch.setattr(gateway.cooldown, "open", denying_open, raising=False)
    assert fstore.active(T, {}) == {}
    monkeypatch.undo()

    (warning,) = warnings
    assert str(path) in warning and "unreadable (Permission denied)" in warning
    assert path.with_name("cooldowns.json.corrupt").exists()
    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert list(FileStore(path).active(T, {})) == ["primary"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_for_real(fstore: FileStore, path: Path, warnings: list[str]) -> None:
    path.parent.mkdir()
    path.write_bytes(b"{}")
    path.chmod(0)
    assert fstore.active(T, {}) == {}
    assert "Permission denied" in warnings[0]


def test_a_directory_in_the_way_keeps_cooldowns_in_memory(
    fstore: FileStore, path: Path, warnings: list[str]
) -> None:
    path.mkdir(parents=True)
    (path / "precious.txt").write_text("the user's")

    assert fstore.active(T, {}) == {}
    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    fstore.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert sorted(fstore.active(T, {})) == ["fallback", "primary"]

    (warning,) = warnings
    assert str(path) in warning and "directory" in warning and "memory" in warning
    assert (path / "precious.txt").read_text() == "the user's"


def test_when_nothing_can_be_written_cooldowns_live_in_memory(
    tmp_path: Path, warnings: list[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state dir should be")
    store = FileStore(blocker / "cooldowns.json", warn=warnings.append)

    store.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    store.cool("fallback", until=T + 60, kind=ErrorKind.AUTH, now=T, credential=KEY)
    store.clear("primary")
    assert list(store.active(T, {"fallback": KEY})) == ["fallback"]
    (warning,) = warnings
    assert "cannot write the state file" in warning and "memory" in warning


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_keeps_cooldowns_in_memory(
    fstore: FileStore, path: Path, warnings: list[str]
) -> None:
    path.parent.mkdir()
    FileStore(path).cool("old", until=T + 60, kind=ErrorKind.SERVER, now=T)
    path.parent.chmod(0o500)
    try:
        fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
        assert sorted(fstore.active(T, {})) == ["old", "primary"]
        assert len(warnings) == 1 and "memory" in warnings[0]
    finally:
        path.parent.chmod(0o700)


def test_warnings_go_to_the_state_logger_by_default(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path.parent.mkdir()
    path.write_bytes(b"{")
    with caplog.at_level(logging.WARNING, logger="support_ask.state"):
        assert FileStore(path).active(T, {}) == {}
    assert [r.name for r in caplog.records] == ["support_ask.state"]
    assert str(path) in caplog.records[0].getMessage()


# -- many processes at once ----------------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from gateway.cooldown import FileStore
from gateway.model import ErrorKind

path, folder, index = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
store = FileStore(path, warn=lambda m: print("WARN", m, file=sys.stderr))
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
now = 1_700_000_000.0
for j in range(3):
    store.cool(f"d{index}-{j}", until=now + 100, kind=ErrorKind.SERVER, now=now, detail=str(index))
store.cool("shared", until=now + 1000 + index, kind=ErrorKind.RATE_LIMIT, now=now)
"""

READER = """
import json, sys, time
from pathlib import Path

path, folder = Path(sys.argv[1]), Path(sys.argv[2])
reads, bad, shrank, most = 0, [], 0, 0
(folder / "ready-reader").touch()
while not (folder / "stop").exists():
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        continue
    reads += 1
    try:
        count = len(json.loads(data)["cooldowns"])
    except Exception as exc:
        bad.append(repr(exc))
        continue
    shrank += count < most
    most = max(most, count)
    time.sleep(0.0002)
print(json.dumps({"reads": reads, "bad": bad, "shrank": shrank}))
"""

WRITERS = 24


def test_concurrent_processes_lose_no_update_and_never_see_a_broken_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cooldowns.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def spawn(code: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(tmp_path), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    reader = spawn(READER)
    writers = [spawn(WRITER, str(i)) for i in range(WRITERS)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < WRITERS + 1:  # all imported: start together
        assert time.monotonic() < deadline, "processes did not start"
        time.sleep(0.005)
    (tmp_path / "go").touch()
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0 and err == "", err
    (tmp_path / "stop").touch()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    seen = json.loads(out)

    assert seen["bad"] == [], "a reader saw a half-written file"
    assert seen["reads"] > 0 and seen["shrank"] == 0, "an update was lost mid-run"
    entries = {c.deployment: c for c in FileStore(path, warn=pytest.fail).entries()}
    expected = {f"d{i}-{j}" for i in range(WRITERS) for j in range(3)} | {"shared"}
    assert set(entries) == expected
    assert entries["shared"].until == 1_700_000_000.0 + 1000 + WRITERS - 1, "only extended"
    assert sorted(p.name for p in tmp_path.glob(".*.tmp")) == []
