"""The cache of validated configs: a Config kept in the user cache dir, as JSON.

Every question loads the config, and parsing and validating the YAML costs ~8 ms (most of
it importing yaml): more than all the rest of support-ask's own start-up. So a validated
Config is kept in the user cache dir, under the config's name (the path as given, which
becomes `Config.source`, and its absolute form, whose folder relative paths join) and a
version holding everything else the result depends on: the file's identity and version
(device, inode, size, mtime, ctime), $HOME (`~` in paths) and this code (a new release,
or an edited checkout, may validate differently). A config that fails validation is never
stored, so its error names file:line:key every time; anything wrong with the cache
(missing, corrupt, another user's, unwritable) is a silent miss.

JSON, not pickle: json is loaded already (pickle would cost ~1.5 ms more), and a tampered
cache can at worst describe a config, never run code. Even so, only a cache file that is
the user's own and writable by nobody else is trusted.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from enum import Enum
from pathlib import Path, PurePath

from gateway.config.find import user_dir
from gateway.config.model import (
    BUNDLED_SOURCE,
    AnswerSettings,
    ArticleSettings,
    CitationStyle,
    Config,
    Deployment,
    KeyStrategy,
    Limits,
    LogSettings,
    MaskPattern,
    Policy,
    Price,
    PrivacySettings,
    RefreshRule,
    StateSettings,
    Translations,
)
from gateway.model import ProviderKind
from gateway.record import fields, is_record

_CACHE_FORMAT = 1
_CACHE_FILE = "config-cache.json"
_CACHE_ENTRIES = 8  # configs remembered, the most recently stored first
# A file is stored only once a timestamp tick has passed since it last changed: a next edit
# within the same tick could otherwise keep every timestamp the version holds, and the size
# ("racy git"); once stored, any later edit shows in the version. Sub-second timestamps tick
# with the kernel's coarse clock (<= 10 ms); whole seconds mean a filesystem that keeps only
# those (FAT: 2 s).
_SETTLE_FINE_S = 0.1
_SETTLE_COARSE_S = 2.0
_ENUMS: dict[str, type[Enum]] = {
    e.__name__: e for e in (ProviderKind, KeyStrategy, CitationStyle, RefreshRule)
}
_RECORDS: dict[str, type] = {
    c.__name__: c
    for c in (
        Config,
        Deployment,
        Policy,
        Price,
        Limits,
        LogSettings,
        StateSettings,
        ArticleSettings,
        AnswerSettings,
    )
} | {c.__name__: c for c in (PrivacySettings, MaskPattern, Translations)}


# (which config, which state of it and of the code that validated it, may it be stored).
# A plain tuple: a record class would cost this module's import a third of a millisecond.
_CacheKey = tuple[str, list[object], bool]


def _cache_dir() -> Path:
    return user_dir("cache")


def _code_version() -> list[object]:
    """What changes when the code that validates (or the records it builds) changes: every
    module of this package, listed rather than named so that a new one is never left out,
    the gateway's vocabulary the records hold, and the secrets' shapes (a key pasted into
    the file is refused by its shape: a shape added must refuse a file cached before)."""
    from gateway import model

    package = os.path.dirname(__file__)
    sources = [os.path.join(package, n) for n in sorted(os.listdir(package)) if n.endswith(".py")]
    shapes = os.path.join(os.path.dirname(package), "secrets", "shapes.py")
    version: list[object] = [_CACHE_FORMAT, *sys.version_info[:2]]
    for source in (*sources, model.__file__ or "", shapes):
        info = os.stat(source)
        version += [source, info.st_ino, info.st_size, info.st_mtime_ns]
    return version


def _settled(info: os.stat_result, started: float) -> bool:
    """Has a timestamp tick passed between the file's last change and `started`?"""
    coarse = info.st_mtime_ns % 1_000_000_000 == 0 and info.st_ctime_ns % 1_000_000_000 == 0
    settle = _SETTLE_COARSE_S if coarse else _SETTLE_FINE_S
    return started - max(info.st_mtime, info.st_ctime) >= settle


def file_key(path: Path) -> _CacheKey | None:
    """None when the path is not a regular file: the normal load says what it is."""
    started = time.time()
    try:
        file = path.expanduser()
        info = os.stat(file)
        if not stat.S_ISREG(info.st_mode):
            return None
        name = f"{path}\0{file.absolute()}"
        version = [
            *_code_version(),
            os.path.expanduser("~"),
            *(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns),
        ]
        return name, version, _settled(info, started)
    except (OSError, ValueError):
        return None


def bundled_key(file: Path) -> _CacheKey | None:
    """Not keyed by the current folder or $HOME: holds only a default without paths."""
    started = time.time()
    try:
        info = os.stat(file)
        version = [*_code_version(), info.st_ino, info.st_size, info.st_mtime_ns]
        return BUNDLED_SOURCE, version, _settled(info, started)
    except (OSError, ValueError):
        return None


def _cache_entries() -> list[dict[str, object]]:
    """The stored entries; raises on any problem with the file."""
    import json

    with open(_cache_dir() / _CACHE_FILE, "rb") as stream:
        info = os.fstat(stream.fileno())
        getuid = getattr(os, "getuid", None)
        if (getuid is not None and info.st_uid != getuid()) or info.st_mode & 0o022:
            raise PermissionError("someone else could have written the config cache")
        document = json.loads(stream.read())
    if document["format"] != _CACHE_FORMAT:
        raise ValueError("another format")
    return [entry for entry in document["entries"] if isinstance(entry, dict)]


def lookup(key: _CacheKey | None) -> Config | None:
    if key is None:
        return None
    name, version, _ = key
    try:
        found = next(
            (e for e in _cache_entries() if e["name"] == name and e["version"] == version),
            None,
        )
        config = None if found is None else _decode(found["config"])
    except Exception:  # a cache can only miss: whatever is wrong with it, load the file
        return None
    if not isinstance(config, Config):
        return None
    if config.prompt is not None and not config.prompt.is_file():
        return None  # gone since it was cached: the normal load reports it, with its line
    return config


def store(key: _CacheKey | None, config: Config) -> None:
    if key is None or not key[2]:
        return
    if any(d.headers for d in config.all_deployments()):
        return  # header values may be credentials (a gateway's own key): never copied
    if config.state.url is not None:
        return  # a Redis URL may hold a password: never copied
    import json

    name, version, _ = key
    try:
        encoded = _encode(config)
        if _decode(json.loads(json.dumps(encoded))) != config:
            return  # it would not come back the same
    except Exception:  # a value the encoding does not know: not cached
        return
    try:
        kept = [e for e in _cache_entries() if e.get("name") != name]
    except Exception:  # unreadable or not ours: start afresh
        kept = []
    _write([{"name": name, "version": version, "config": encoded}, *kept])


def forget(key: _CacheKey | None) -> None:
    """Drop every entry of this config: it failed validation, so nothing cached from it
    may outlive it (an entry of an older version could hold what validation refuses now,
    a credential in a base_url, say)."""
    if key is None:
        return
    try:
        entries = _cache_entries()
    except Exception:  # nothing readable: nothing of ours to drop
        return
    kept = [e for e in entries if e.get("name") != key[0]]
    if len(kept) != len(entries):
        _write(kept)


def _write(entries: list[dict[str, object]]) -> None:
    import json

    folder = _cache_dir()
    temp = folder / f".{_CACHE_FILE}.{os.getpid()}.tmp"
    try:
        document = {"format": _CACHE_FORMAT, "entries": entries[:_CACHE_ENTRIES]}
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A private temporary file, renamed over the cache: readers see the old or the new.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temp, flags, 0o600)
        with open(fd, "wb") as stream:
            stream.write(json.dumps(document).encode())
        os.replace(temp, folder / _CACHE_FILE)
    except Exception:  # a cache that cannot be written only makes the next run slower
        with contextlib.suppress(OSError):
            temp.unlink()


def _encode(value: object) -> object:
    """`value` as JSON, tagged so that `_decode` rebuilds the very same records."""
    if isinstance(value, Enum):  # before str: a StrEnum is a str
        return {"$enum": type(value).__name__, "value": value.value}
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, PurePath):
        return {"$path": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    name = type(value).__name__
    if _RECORDS.get(name) is not type(value) or not is_record(value):
        raise TypeError(f"a config holds a {name}: not cacheable")
    return {
        "$record": name,
        "fields": {f.name: _encode(getattr(value, f.name)) for f in fields(value)},
    }


def _decode(data: object) -> object:
    if data is None or type(data) in (str, int, float, bool):
        return data
    if not isinstance(data, dict):
        raise TypeError("not a cached value")
    if "$path" in data:
        return Path(data["$path"])
    if "$tuple" in data:
        return tuple(_decode(v) for v in data["$tuple"])
    if "$enum" in data:
        enum = _ENUMS.get(data["$enum"])
        if enum is None:
            raise TypeError("not a cached enum")
        return enum(data["value"])
    record = _RECORDS[data["$record"]]
    return record(**{name: _decode(v) for name, v in data["fields"].items()})
