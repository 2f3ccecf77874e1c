"""The shared state: the rules every store follows, and what the file store does on disk.

The rule tests run against every store (`store` fixture);
tests/gateway/state/test_state_redis.py adds the Redis store to the same table.
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gateway.state.file
from gateway.model import ErrorKind
from gateway.secrets.key import Secret
from gateway.state.file import FileStore
from gateway.state.memory import MemoryStore
from gateway.state.realtime import RealTimeStore
from gateway.state.records import StateBounds
from tests.support.paths import REPO
from tests.support.state_rules import RULE_CASES, T

ROOT = REPO
KEY = Secret("sk-test-Zq8v3KxT1mN4bR7wY2cF9hJ6")
NEW_KEY = Secret("sk-test-rotated-4bR7wY2cF9hJ6Zq8")

Store = MemoryStore | FileStore


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return FileStore(tmp_path / "cooldowns.json", warn=pytest.fail)


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda c: c.__name__)
def test_the_rules(store: Store, case: Callable[[Store], None]) -> None:
    case(store)


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
    FileStore(path).cool("primary", until=T + 60, kind=ErrorKind.OVERLOADED, now=T, status=529)
    (cooldown,) = FileStore(path).active(T, {}).values()
    assert (cooldown.name, cooldown.kind, cooldown.status) == ("primary", ErrorKind.OVERLOADED, 529)
    FileStore(path).clear("primary")
    assert FileStore(path).active(T, {}) == {}


def test_the_file_keeps_what_classifies_a_failure_and_a_fingerprint_never_the_key(
    fstore: FileStore, path: Path
) -> None:
    fstore.cool(
        "key:OPENAI_API_KEY",
        until=T + 60,
        kind=ErrorKind.AUTH,
        now=T,
        credential=KEY,
        status=401,
        code="invalid_api_key",
        deployment="primary",
    )
    fstore.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T)
    raw = path.read_bytes()
    assert KEY.reveal().encode() not in raw
    assert KEY.reveal()[8:].encode() not in raw  # not even the key's tail
    doc = json.loads(raw)
    assert doc["version"] == 1
    bytes.fromhex(doc["salt"])
    assert doc["cooldowns"]["key:OPENAI_API_KEY"] == {
        "until": T + 60,
        "kind": "auth",
        "started": T,
        "trips": 1,
        "basis": "policy",
        "status": 401,
        "code": "invalid_api_key",
        "credential": KEY.fingerprint(bytes.fromhex(doc["salt"])),
        "deployment": "primary",
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
    "no version": b'{"salt": "00ff", "cooldowns": {}}',
    "too large": b'{"version": 1, "salt": "00", "cooldowns": {}, "pad": "'
    + b"x" * (1 << 20)
    + b'"}',
    "bad salt": b'{"version": 1, "salt": "zz", "cooldowns": {}}',
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


def _file_with(path: Path, cooldowns: dict[str, object], **extra: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"version": 1, "salt": "00ff", "cooldowns": cooldowns, **extra}
    data = json.dumps(doc).encode()  # NaN and Infinity as Python's json writes them
    path.write_bytes(data)
    return data


GOOD = {"until": T + 60, "kind": "server", "started": T}
BAD_ENTRIES = {
    "nan": {**GOOD, "until": math.nan},
    "infinite": {**GOOD, "until": math.inf},
    "absurd": {**GOOD, "until": 1e300},
    "negative start": {**GOOD, "started": -5.0},
    "text": {**GOOD, "until": "soon"},
    "unknown kind": {**GOOD, "kind": "gremlins"},
    "ends before it starts": {**GOOD, "until": T - 10},
    "not an object": [1, 2],
}


@pytest.mark.parametrize("bad", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_a_bad_entry_is_dropped_with_a_warning_and_the_others_kept(
    fstore: FileStore, path: Path, warnings: list[str], bad: object
) -> None:
    _file_with(path, {"primary": GOOD, "broken": bad})

    assert list(fstore.active(T, {})) == ["primary"], "one bad entry discards nothing else"
    (warning,) = warnings
    assert str(path) in warning and "'broken'" in warning and "dropped" in warning
    doc = json.loads(path.read_bytes())  # rewritten without it: strict JSON again
    assert list(doc["cooldowns"]) == ["primary"]
    assert not path.with_name("cooldowns.json.corrupt").exists(), "the file was not corrupt"
    later: list[str] = []
    assert list(FileStore(path, warn=later.append).active(T, {})) == ["primary"]
    assert later == []


def test_a_file_of_a_newer_version_is_left_alone(
    fstore: FileStore, path: Path, warnings: list[str]
) -> None:
    path.parent.mkdir()
    data = b'{"version": 2, "salt": "00ff", "cooldowns": {}, "new": "things"}'
    path.write_bytes(data)

    assert fstore.active(T, {}) == {}
    fstore.cool("primary", until=T + 60, kind=ErrorKind.SERVER, now=T)
    fstore.clear("primary")
    fstore.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T)

    assert path.read_bytes() == data, "not ours to replace"
    assert not path.with_name("cooldowns.json.corrupt").exists()
    (warning,) = warnings
    assert "version 2" in warning and "newer support-ask" in warning and "corrupt" not in warning
    assert list(fstore.active(T, {})) == ["fallback"], "this run's cooldowns, in memory"


def test_a_second_corruption_keeps_the_first_copy(path: Path) -> None:
    path.parent.mkdir()
    for n, garbage in enumerate((b"{first", b"{second", b"{third")):
        path.write_bytes(garbage)
        warnings: list[str] = []
        assert FileStore(path, warn=warnings.append).active(T, {}) == {}
        aside = path.with_name("cooldowns.json.corrupt" + (f".{n}" if n else ""))
        assert str(aside) in warnings[0]
    assert path.with_name("cooldowns.json.corrupt").read_bytes() == b"{first"
    assert path.with_name("cooldowns.json.corrupt.1").read_bytes() == b"{second"
    assert path.with_name("cooldowns.json.corrupt.2").read_bytes() == b"{third"


def test_a_read_only_store_reports_and_never_moves_or_writes(path: Path) -> None:
    path.parent.mkdir()
    path.write_bytes(b"{broken")
    warnings: list[str] = []
    listing = FileStore(path, warn=warnings.append, read_only=True)
    assert listing.active(T, {}) == {} and listing.entries() == []
    assert path.read_bytes() == b"{broken" and sorted(os.listdir(path.parent)) == ["cooldowns.json"]
    assert "corrupt" in warnings[0]

    data = _file_with(path, {"primary": GOOD, "broken": BAD_ENTRIES["nan"]})
    warnings.clear()
    assert list(listing.active(T, {})) == ["primary"]
    assert path.read_bytes() == data and "'broken'" in warnings[0]

    listing.cool("x", until=T + 60, kind=ErrorKind.SERVER, now=T)
    assert path.read_bytes() == data, "a listing changes nothing on disk"
    missing = path.with_name("never.json")
    assert FileStore(missing, read_only=True).entries() == [] and not missing.exists()


def test_records_of_names_no_longer_configured_are_pruned(path: Path) -> None:
    FileStore(path).cool("retired", until=T + 600, kind=ErrorKind.SERVER, now=T)
    FileStore(path).cool("key:OLD_KEY", until=T + 600, kind=ErrorKind.AUTH, now=T)
    FileStore(path).cool("primary", until=T + 600, kind=ErrorKind.SERVER, now=T)
    store = FileStore(path, known={"primary", "fallback", "key:OPENAI_API_KEY"})
    store.cool("fallback", until=T + 60, kind=ErrorKind.SERVER, now=T + 1)
    assert sorted(json.loads(path.read_bytes())["cooldowns"]) == ["fallback", "primary"]


def test_the_file_cannot_grow_without_bound(path: Path) -> None:
    store = FileStore(path, limits=StateBounds(max_entries=50))
    for i in range(200):
        store.cool(f"d{i:03d}", until=T + 100 + i, kind=ErrorKind.SERVER, now=T)
    kept = json.loads(path.read_bytes())["cooldowns"]
    assert len(kept) == 50 and min(kept) == "d150", "the latest deadlines are the ones kept"
    assert path.stat().st_size < 20_000


def test_simulated_time_is_written_as_real_time(path: Path) -> None:
    real = time.time()
    virtual_now = real + 500  # virtual time ran ahead through the waits it showed
    RealTimeStore(FileStore(path)).cool(
        "primary", until=virtual_now + 60, kind=ErrorKind.RATE_LIMIT, now=virtual_now
    )
    (c,) = FileStore(path).entries()
    assert real - 1 <= c.started <= time.time(), "started now, not in the future"
    assert c.until - c.started == pytest.approx(60)


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
    monkeypatch.setattr(gateway.state.file, "open", denying_open, raising=False)
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
from gateway.state.file import FileStore
from gateway.model import ErrorKind

path, folder, index = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
store = FileStore(path, warn=lambda m: print("WARN", m, file=sys.stderr))
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
now = 1_700_000_000.0
for j in range(3):
    store.cool(f"d{index}-{j}", until=now + 100, kind=ErrorKind.SERVER, now=now)
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


@pytest.mark.slow
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
