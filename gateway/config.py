"""The YAML configuration, loaded into frozen dataclasses and validated with file:line errors."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from dataclasses import dataclass, field, fields, is_dataclass, replace
from enum import Enum
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, NoReturn

from gateway.model import ProviderKind


@dataclass(frozen=True)
class Policy:
    """How hard to try. Top-level defaults; any field can be overridden per deployment."""

    retries: int = 2  # retries per deployment after the first call
    backoff_base: float = 1.0  # seconds; doubles each retry
    backoff_max: float = 8.0
    cooldown: float = 60.0  # seconds a failed deployment is skipped
    budget: float = 30.0  # seconds across ALL attempts of one question
    timeout: float = 20.0  # seconds for one attempt, capped by what is left of the budget


@dataclass(frozen=True)
class Deployment:
    """One model behind one provider, with its window and its own policy."""

    name: str
    provider: ProviderKind
    context_window: int
    policy: Policy = field(default_factory=Policy)
    model: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    api_version: str | None = None  # azure only
    headers: tuple[tuple[str, str], ...] = ()  # extra request headers (openai-compatible)


@dataclass(frozen=True)
class LogSettings:
    """The attempt log (JSON Lines)."""

    enabled: bool = True
    path: Path | None = None  # None = platformdirs user log dir / attempts.jsonl
    include_text: bool = False  # question and answer text are customer data: off by default
    max_bytes: int = 5_000_000


@dataclass(frozen=True)
class Config:
    """The whole configuration: what to try, in which order, how hard."""

    product: str
    deployments: tuple[Deployment, ...]
    long_context: Deployment | None = None
    policy: Policy = field(default_factory=Policy)
    max_output_tokens: int = 400
    prompt: Path | None = None  # None = the bundled portable prompt
    state_path: Path | None = None  # None = platformdirs user state dir / cooldowns.json
    source: str = "<bundled default>"  # where this config came from, for messages
    log: LogSettings = field(default_factory=LogSettings)
    max_fallback_rate: float | None = None

    def all_deployments(self) -> tuple[Deployment, ...]:
        extra = () if self.long_context is None else (self.long_context,)
        return self.deployments + extra


class ConfigError(Exception):
    """A configuration problem; the message names the file, line and key, and the fix."""

    def __init__(self, message: str, *, file: str, line: int | None = None, key: str | None = None):
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


# --- Loading ---------------------------------------------------------------------------
#
# The YAML is composed to nodes rather than loaded to dicts so that every value keeps its
# line: a config error names file:line and the key path (`deployments[1].context_window`).
# Per-deployment policy overrides live in a nested `policy:` mapping only, so a key in a
# deployment means one thing; a flat `retries:` there is an error that shows the nested form.

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from yaml import Node
    from yaml.constructor import SafeConstructor

    Pair = tuple[Node, Node]

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"

_TOP_KEYS = (
    "product",
    "prompt",
    "max_output_tokens",
    "policy",
    "deployments",
    "long_context",
    "state",
    "log",
    "max_fallback_rate",
)
_POLICY_KEYS = tuple(f.name for f in fields(Policy))
_DEPLOYMENT_KEYS = (
    "name",
    "provider",
    "model",
    "api_key_env",
    "base_url",
    "api_version",
    "context_window",
    "headers",
    "policy",
)
_STATE_KEYS = ("path",)
_LOG_KEYS = tuple(f.name for f in fields(LogSettings))

# Patterns, compiled (and cached by `re`) only when a file is validated: a cached config
# needs none of them.
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"
_DEPLOYMENT_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z"
_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z"
# Prefixes of real API keys (OpenAI, Google, Groq, xAI, Hugging Face, Anthropic's sk-ant-).
_KEY_PREFIXES = ("sk-", "sk_", "AIza", "gsk_", "xai-", "hf_")
# Headers that carry a credential: keys come from api_key_env, never from the YAML.
_AUTH_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "x-goog-api-key"})
_SECRET_KEY_NAMES = frozenset({"api_key", "apikey", "key", "token", "secret", "password"})

_DEFAULT_FILE = "default_config.yaml"

CONFIG_ENV = "SUPPORT_ASK_CONFIG"
STATE_ENV = "SUPPORT_ASK_STATE"
APP_NAME = "support-ask"
BUNDLED_SOURCE = "<bundled default>"


def load_config(path: Path) -> Config:
    """Read and validate a config file; relative paths inside it are relative to its folder.

    A config validated before and unchanged since comes from the cache (see below)."""
    key = _file_key(path)
    cached = _cache_lookup(key)
    if cached is not None:
        return cached
    config = _load_config_file(path)
    _cache_store(key, config)
    return config


def _load_config_file(path: Path) -> Config:
    try:
        data = path.expanduser().read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            "no such config file; fix: check the path, or give none to use the bundled default",
            file=str(path),
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            "this is a directory, not a config file; fix: name the YAML file inside it",
            file=str(path),
        ) from None
    except PermissionError:
        raise ConfigError(
            f"cannot read the config file (permission denied); fix: chmod u+r {path}",
            file=str(path),
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read the config file ({exc.strerror or exc}); fix: check the path",
            file=str(path),
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            "the file is not UTF-8 text; fix: save it as UTF-8",
            file=str(path),
            line=data[: exc.start].count(b"\n") + 1,
        ) from None
    return load_config_text(text, str(path), base_dir=path.expanduser().absolute().parent)


def load_default_config() -> Config:
    """The bundled default (identical to sample-config.yaml): ends in the offline deployment."""
    beside = Path(__file__).with_name(_DEFAULT_FILE)
    key = _bundled_key(beside)
    cached = _cache_lookup(key)
    if cached is not None:
        return cached
    try:
        # Beside this module in every ordinary install; importlib.resources costs ~1 ms.
        text = beside.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # imported from a zip, say
        from importlib.resources import files

        text = files("gateway").joinpath(_DEFAULT_FILE).read_text(encoding="utf-8")
    config = load_config_text(text, BUNDLED_SOURCE)
    if not _has_paths(config):  # relative ones would depend on the current folder
        _cache_store(key, config)
    return config


def load_config_text(text: str, source: str, *, base_dir: Path | None = None) -> Config:
    """Validate config text. `source` names it in errors; relative paths join `base_dir`
    (default: the current directory)."""
    import yaml

    loader_class: type[SafeConstructor]
    try:
        loader_class = yaml.CSafeLoader  # libyaml: several times faster than the pure parser
    except AttributeError:  # pragma: no cover - pyyaml built without libyaml
        loader_class = yaml.SafeLoader
    loader = loader_class(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            context = f" ({exc.context})" if exc.context and exc.problem else ""
            raise ConfigError(
                f"invalid YAML: {problem}{context}",
                file=source,
                line=None if mark is None else mark.line + 1,
            ) from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}", file=source) from None
        if root is None:
            raise ConfigError(
                "the config is empty; fix: start from sample-config.yaml", file=source, line=1
            )
        return _Reader(source, loader, base_dir or Path.cwd()).config(root)
    finally:
        loader.dispose()


# --- The cache of validated configs ----------------------------------------------------
#
# Every question loads the config, and parsing and validating the YAML costs ~8 ms (most of
# it importing yaml): more than all the rest of support-ask's own start-up. So a validated
# Config is kept in the user cache dir, under the config's name (the path as given, which
# becomes `Config.source`, and its absolute form, whose folder relative paths join) and a
# version holding everything else the result depends on: the file's identity and version
# (device, inode, size, mtime, ctime), $HOME (`~` in paths) and this code (a new release,
# or an edited checkout, may validate differently). A config that fails validation is never
# stored, so its error names file:line:key every time; anything wrong with the cache
# (missing, corrupt, another user's, unwritable) is a silent miss.
#
# JSON, not pickle: json is loaded already (pickle would cost ~1.5 ms more), and a tampered
# cache can at worst describe a config, never run code. Even so, only a cache file that is
# the user's own and writable by nobody else is trusted.

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
_RECORDS: dict[str, type] = {c.__name__: c for c in (Config, Deployment, Policy, LogSettings)}


# (which config, which state of it and of the code that validated it, may it be stored).
# A plain tuple: a record class would cost this module's import a third of a millisecond.
_CacheKey = tuple[str, list[object], bool]


def _cache_dir() -> Path:
    if sys.platform.startswith("linux"):
        # What platformdirs answers on Linux (the XDG base directory spec), without the
        # ~1.5 ms of importing it: with --config and --state given, nothing else needs it.
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        return Path(base, APP_NAME)
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def _code_version() -> list[object]:
    """What changes when the code that validates (or the records it builds) changes."""
    from gateway import model

    version: list[object] = [_CACHE_FORMAT, *sys.version_info[:2]]
    for source in (__file__, model.__file__ or ""):
        info = os.stat(source)
        version += [source, info.st_ino, info.st_size, info.st_mtime_ns]
    return version


def _settled(info: os.stat_result, started: float) -> bool:
    """Has a timestamp tick passed between the file's last change and `started`?"""
    coarse = info.st_mtime_ns % 1_000_000_000 == 0 and info.st_ctime_ns % 1_000_000_000 == 0
    settle = _SETTLE_COARSE_S if coarse else _SETTLE_FINE_S
    return started - max(info.st_mtime, info.st_ctime) >= settle


def _file_key(path: Path) -> _CacheKey | None:
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


def _bundled_key(file: Path) -> _CacheKey | None:
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


def _cache_lookup(key: _CacheKey | None) -> Config | None:
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


def _has_paths(config: Config) -> bool:
    return any(p is not None for p in (config.prompt, config.state_path, config.log.path))


def _cache_store(key: _CacheKey | None, config: Config) -> None:
    if key is None or not key[2]:
        return
    if any(d.headers for d in config.all_deployments()):
        return  # header values may be credentials (a gateway's own key): never copied
    import json

    name, version, _ = key
    folder = _cache_dir()
    temp = folder / f".{_CACHE_FILE}.{os.getpid()}.tmp"
    try:
        encoded = _encode(config)
        if _decode(json.loads(json.dumps(encoded))) != config:
            return  # it would not come back the same
        try:
            kept = [e for e in _cache_entries() if e.get("name") != name]
        except Exception:  # unreadable or not ours: start afresh
            kept = []
        entry = {"name": name, "version": version, "config": encoded}
        document = {"format": _CACHE_FORMAT, "entries": [entry, *kept][:_CACHE_ENTRIES]}
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
    if _RECORDS.get(name) is not type(value) or not is_dataclass(value):
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
        if data["$enum"] != ProviderKind.__name__:
            raise TypeError("not a cached enum")
        return ProviderKind(data["value"])
    record = _RECORDS[data["$record"]]
    return record(**{name: _decode(v) for name, v in data["fields"].items()})


def find_config(flag: Path | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to use, or None for the bundled default.

    Order: --config, $SUPPORT_ASK_CONFIG, ./support-ask.yaml, the user config dir's
    config.yaml. A file named by the flag or the variable must exist: a typo there is an
    error, not a silent fall-through to another config.
    """
    named = (
        (flag, "--config")
        if flag is not None
        else ((Path(environ[CONFIG_ENV]), f"${CONFIG_ENV}") if environ.get(CONFIG_ENV) else None)
    )
    if named is not None:
        path, origin = named
        path = path.expanduser()
        if not path.is_absolute():
            path = cwd / path
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise ConfigError(
                f"the config file named by {origin} {what}; fix: correct the path, or unset "
                f"it to use ./support-ask.yaml, the user config dir or the bundled default",
                file=str(path),
            )
        return path
    local = cwd / "support-ask.yaml"
    if local.is_file():
        return local
    import platformdirs

    user = Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.yaml"
    return user if user.is_file() else None


def resolve_state_path(flag: Path | None, environ: Mapping[str, str], config: Config) -> Path:
    """The cooldown state file: --state, $SUPPORT_ASK_STATE, state.path, the user state dir."""
    if flag is not None:
        return flag.expanduser()
    if environ.get(STATE_ENV):
        return Path(environ[STATE_ENV]).expanduser()
    if config.state_path is not None:
        return config.state_path
    import platformdirs

    return Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)) / "cooldowns.json"


def _looks_like_a_key(value: str) -> bool:
    if value.startswith(_KEY_PREFIXES):
        return True
    # Long, mixed-case, digits, no underscore: a token, not a variable name like OPENAI_API_KEY.
    return (
        len(value) >= 30
        and "_" not in value
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and any(c.isupper() for c in value)
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Reader:
    """Turns a composed YAML tree into a Config, failing at the first problem with its line."""

    def __init__(self, source: str, loader: SafeConstructor, base_dir: Path) -> None:
        self.source = source
        self.loader = loader
        self.base_dir = base_dir
        self.key_lines: dict[int, int] = {}  # id(collection value node) -> its key's line

    # -- errors

    def fail(self, node: Node, key: str | None, message: str) -> NoReturn:
        line = self.key_lines.get(id(node))
        if line is None and node.start_mark is not None:
            line = node.start_mark.line
        raise ConfigError(
            message, file=self.source, line=None if line is None else line + 1, key=key
        )

    def describe(self, node: Node, *, secret: bool = False) -> str:
        """What the user wrote, in words; `secret` values are never echoed."""
        from yaml import MappingNode, SequenceNode

        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        kind = {
            _NULL: "nothing (null)",
            _BOOL: "a true/false value",
            _INT: "a whole number",
            _FLOAT: "a number",
        }.get(node.tag, "text")
        shown = str(node.value)
        if secret or node.tag == _NULL or _looks_like_a_key(shown):
            return kind
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{kind} {shown!r}"

    # -- shapes

    def pairs(self, node: Node, path: str, *, fold: Callable[[str], str] = str) -> list[Pair]:
        """A mapping's (key, value) nodes, merge keys applied (an explicit key overrides a
        merged one, as in YAML); a key written twice is an error, not a silent override."""
        from yaml import MappingNode, ScalarNode, SequenceNode

        if not isinstance(node, MappingNode):
            self.fail(node, path or None, f"expected a mapping, got {self.describe(node)}")
        first: dict[str, Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode):
                self.fail(key_node, path or None, "a key must be plain text")
            if key_node.tag == _MERGE:
                continue
            key = fold(str(key_node.value))
            if key in first:
                line = first[key].start_mark.line + 1
                self.fail(
                    key_node,
                    _join(path, str(key_node.value)),
                    f"given twice (first on line {line}); keep one",
                )
            first[key] = key_node
        self.loader.flatten_mapping(node)  # YAML merge keys (<<: *defaults), merged first
        latest: dict[str, Pair] = {}
        for key_node, value_node in node.value:
            if isinstance(value_node, MappingNode | SequenceNode):
                # A block value starts below its key; errors about it point at the key.
                self.key_lines[id(value_node)] = key_node.start_mark.line
            latest[fold(str(key_node.value))] = (key_node, value_node)
        return list(latest.values())

    def mapping(
        self, node: Node, path: str, allowed: Iterable[str], *, where: str = ""
    ) -> dict[str, Pair]:
        """A mapping's entries by key: unknown and repeated keys are errors."""
        allowed = tuple(allowed)
        out: dict[str, Pair] = {}
        for key_node, value_node in self.pairs(node, path):
            key = str(key_node.value)
            if key not in allowed:
                shown = "<not shown>" if _looks_like_a_key(key) else key
                self.fail(key_node, _join(path, shown), self.unknown_key(key, allowed, where))
            out[key] = (key_node, value_node)
        return out

    def unknown_key(self, key: str, allowed: tuple[str, ...], where: str) -> str:
        import difflib

        shown = "(not shown: it looks like an API key)" if _looks_like_a_key(key) else repr(key)
        message = f"unknown key {shown}{where}"
        if where == " in a deployment" and key in _POLICY_KEYS:
            return f"{message}; policy overrides go in a nested mapping: `policy: {{{key}: ...}}`"
        if key.lower() in _SECRET_KEY_NAMES:
            return (
                f"{message}; API keys never go in the config: put the key in an environment "
                "variable and name that variable with api_key_env"
            )
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{message}{hint}; valid keys: {', '.join(allowed)}"

    def required(self, entries: dict[str, Pair], key: str, node: Node, path: str) -> Node:
        if key not in entries:
            self.fail(node, _join(path, key), "missing; this key is required")
        return entries[key][1]

    # -- scalars

    def is_null(self, node: Node) -> bool:
        from yaml import ScalarNode

        return isinstance(node, ScalarNode) and node.tag == _NULL

    def text(self, node: Node, path: str, *, secret: bool = False) -> str:
        """Text as written: an unquoted 2024-10-21 or 1.5 stays the characters typed."""
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag == _NULL:
            self.fail(node, path, f"expected text, got {self.describe(node, secret=secret)}")
        value = str(node.value)
        if not value.strip():
            self.fail(node, path, "must not be empty")
        return value

    def optional_text(self, node: Node | None, path: str, *, secret: bool = False) -> str | None:
        if node is None or self.is_null(node):
            return None
        return self.text(node, path, secret=secret)

    def integer(self, node: Node, path: str, *, minimum: int) -> int:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != _INT:
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a whole number, got {self.describe(node)}{hint}")
        value = self.loader.construct_object(node)
        assert isinstance(value, int)
        if value < minimum:
            self.fail(node, path, f"must be at least {minimum}, got {value}")
        return value

    def number(self, node: Node, path: str, *, minimum: float, above: bool = False) -> float:
        """A float; whole numbers welcome. `above` makes the minimum exclusive."""
        import math

        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag not in (_INT, _FLOAT):
            hint = " (remove the quotes)" if self._quoted_number(node) else ""
            self.fail(node, path, f"expected a number, got {self.describe(node)}{hint}")
        value = float(self.loader.construct_object(node))
        if not math.isfinite(value):
            self.fail(node, path, f"must be a finite number, got {node.value}")
        if value < minimum or (above and value == minimum):
            bound = "greater than" if above else "at least"
            self.fail(node, path, f"must be {bound} {minimum:g}, got {value:g}")
        return value

    def boolean(self, node: Node, path: str) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != _BOOL:
            self.fail(node, path, f"expected true or false, got {self.describe(node)}")
        return bool(self.loader.construct_object(node))

    def path_value(self, node: Node | None, path: str) -> Path | None:
        text = self.optional_text(node, path)
        if text is None:
            return None
        return self.base_dir / Path(text).expanduser()

    def _quoted_number(self, node: Node) -> bool:
        from yaml import ScalarNode

        if not isinstance(node, ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            return False
        try:
            float(str(node.value))
        except ValueError:
            return False
        return True

    # -- sections

    def config(self, root: Node) -> Config:
        from yaml import MappingNode, SequenceNode

        if not isinstance(root, MappingNode):
            self.fail(
                root,
                None,
                f"the top level must be a mapping of {', '.join(_TOP_KEYS[:5])}, ...; "
                f"got {self.describe(root)}",
            )
        top = self.mapping(root, "", _TOP_KEYS)
        product = self.text(self.required(top, "product", root, ""), "product")

        prompt_node = top.get("prompt", (None, None))[1]
        prompt = self.path_value(prompt_node, "prompt")
        if prompt is not None and prompt_node is not None and not prompt.is_file():
            self.fail(
                prompt_node,
                "prompt",
                f"no prompt file at {prompt} (a relative path is relative to the config "
                "file's folder); fix the path, or set null for the bundled prompt",
            )

        max_output_tokens = 400
        if "max_output_tokens" in top:
            max_output_tokens = self.integer(
                top["max_output_tokens"][1], "max_output_tokens", minimum=1
            )

        policy = Policy()
        policy_node: Node = root
        if "policy" in top and not self.is_null(top["policy"][1]):
            policy_node = top["policy"][1]
            policy = self.policy(policy_node, "policy", Policy())

        list_node = self.required(top, "deployments", root, "")
        if not isinstance(list_node, SequenceNode):
            self.fail(list_node, "deployments", f"expected a list, got {self.describe(list_node)}")
        if not list_node.value:
            self.fail(
                list_node,
                "deployments",
                "the list is empty; add at least one deployment (the offline one: "
                "`- {name: local, provider: local, context_window: 1000000}`)",
            )
        seen: dict[str, str] = {}
        deployments = tuple(
            self.deployment(item, f"deployments[{i}]", policy, seen)
            for i, item in enumerate(list_node.value)
        )
        long_context = None
        if "long_context" in top and not self.is_null(top["long_context"][1]):
            long_context = self.deployment(top["long_context"][1], "long_context", policy, seen)

        state_path = None
        if "state" in top and not self.is_null(top["state"][1]):
            state = self.mapping(top["state"][1], "state", _STATE_KEYS, where=" in state")
            state_path = self.path_value(state.get("path", (None, None))[1], "state.path")

        log = LogSettings()
        if "log" in top and not self.is_null(top["log"][1]):
            log = self.log(top["log"][1])

        max_fallback_rate = None
        if "max_fallback_rate" in top and not self.is_null(top["max_fallback_rate"][1]):
            node = top["max_fallback_rate"][1]
            max_fallback_rate = self.number(node, "max_fallback_rate", minimum=0.0)
            if max_fallback_rate > 1:
                self.fail(node, "max_fallback_rate", "a share: between 0 and 1 (0.2 means 20 %)")

        return Config(
            product=product,
            deployments=deployments,
            long_context=long_context,
            policy=policy,
            max_output_tokens=max_output_tokens,
            prompt=prompt,
            state_path=state_path,
            source=self.source,
            log=log,
            max_fallback_rate=max_fallback_rate,
        )

    def policy(self, node: Node, path: str, base: Policy) -> Policy:
        """`base` with the fields given here replaced, then checked as a whole."""
        entries = self.mapping(node, path, _POLICY_KEYS, where=" in a policy")
        retries = base.retries
        times = {
            "backoff_base": base.backoff_base,
            "backoff_max": base.backoff_max,
            "cooldown": base.cooldown,
            "budget": base.budget,
            "timeout": base.timeout,
        }
        for key, (_, value) in entries.items():
            key_path = _join(path, key)
            if key == "retries":
                retries = self.integer(value, key_path, minimum=0)
            else:  # a zero budget or timeout could never make a call; zero waits are fine
                zero_ok = key not in ("budget", "timeout")
                times[key] = self.number(value, key_path, minimum=0.0, above=not zero_ok)
        merged = Policy(retries=retries, **times)
        if merged.backoff_max < merged.backoff_base:
            key = "backoff_max" if "backoff_max" in entries else "backoff_base"
            at = entries[key][1] if key in entries else node
            self.fail(
                at,
                _join(path, key),
                f"backoff_max ({merged.backoff_max:g}) is less than backoff_base "
                f"({merged.backoff_base:g}); the cap must be at least the first delay",
            )
        return merged

    def deployment(self, node: Node, path: str, policy: Policy, seen: dict[str, str]) -> Deployment:
        entries = self.mapping(node, path, _DEPLOYMENT_KEYS, where=" in a deployment")

        def get(key: str) -> Node | None:
            return entries[key][1] if key in entries else None

        name_node = self.required(entries, "name", node, path)
        name = self.text(name_node, f"{path}.name")
        if not re.match(_DEPLOYMENT_NAME, name):
            self.fail(
                name_node,
                f"{path}.name",
                f"{name!r} is not a usable name: letters, digits, '-', '_' and '.' only "
                "(it is typed on the command line and keys the cooldown state)",
            )
        if name in seen:
            self.fail(name_node, f"{path}.name", f"{name!r} is already the name of {seen[name]}")
        seen[name] = path

        provider_node = self.required(entries, "provider", node, path)
        provider_text = self.text(provider_node, f"{path}.provider")
        valid = [kind.value for kind in ProviderKind]
        if provider_text not in valid:
            import difflib

            close = difflib.get_close_matches(provider_text, valid, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(
                provider_node,
                f"{path}.provider",
                f"unknown provider {provider_text!r}{hint}; valid: {', '.join(valid)}",
            )
        provider = ProviderKind(provider_text)

        context_window = self.integer(
            self.required(entries, "context_window", node, path),
            f"{path}.context_window",
            minimum=1,
        )
        model = self.optional_text(get("model"), f"{path}.model")
        api_key_env = self.api_key_env(get("api_key_env"), f"{path}.api_key_env")
        base_url = self.base_url(get("base_url"), f"{path}.base_url")
        api_version = self.optional_text(get("api_version"), f"{path}.api_version")
        headers = self.headers(get("headers"), f"{path}.headers")
        own_policy = policy
        policy_node = get("policy")
        if policy_node is not None and not self.is_null(policy_node):
            own_policy = self.policy(policy_node, f"{path}.policy", policy)

        self.check_provider_fields(provider, entries, node, path, base_url=base_url)
        return Deployment(
            name=name,
            provider=provider,
            context_window=context_window,
            policy=own_policy,
            model=model,
            api_key_env=api_key_env,
            base_url=base_url,
            api_version=api_version,
            headers=headers,
        )

    def check_provider_fields(
        self,
        provider: ProviderKind,
        entries: dict[str, Pair],
        node: Node,
        path: str,
        *,
        base_url: str | None,
    ) -> None:
        """Combinations that can never work are errors now, not a failed call later."""
        given = {k for k, (_, v) in entries.items() if not self.is_null(v)}
        if provider is ProviderKind.LOCAL:
            for key in ("api_key_env", "base_url", "api_version", "headers"):
                if key in given:
                    self.fail(
                        entries[key][0],
                        f"{path}.{key}",
                        "the local provider needs no key and no network; remove this key",
                    )
            return
        if "model" not in given:
            self.fail(node, f"{path}.model", f"missing; {provider} deployments need a model")
        if provider is not ProviderKind.AZURE and "api_version" in given:
            self.fail(
                entries["api_version"][0],
                f"{path}.api_version",
                "only azure deployments take api_version; remove it",
            )
        if provider is ProviderKind.AZURE:
            for key, what in (
                ("base_url", "the resource endpoint, https://<resource>.openai.azure.com"),
                ("api_version", "the API version, e.g. 2024-10-21"),
            ):
                if key not in given:
                    self.fail(node, f"{path}.{key}", f"missing; azure needs {what}")
        # An OpenAI-compatible server of one's own may need no key; the hosted APIs always do.
        needs_key = not (provider is ProviderKind.OPENAI and base_url is not None)
        if needs_key and "api_key_env" not in given:
            self.fail(
                node,
                f"{path}.api_key_env",
                f"missing; name the environment variable that holds the {provider} key",
            )

    def api_key_env(self, node: Node | None, path: str) -> str | None:
        value = self.optional_text(node, path, secret=True)
        if value is None or node is None:
            return None
        if _looks_like_a_key(value):
            self.fail(
                node,
                path,
                "this looks like an API key itself (not shown); put the key in an environment "
                "variable and write that variable's name here, e.g. OPENAI_API_KEY",
            )
        if not re.match(_ENV_NAME, value):
            self.fail(
                node,
                path,
                "not an environment variable name (value not shown): letters, digits and "
                "'_', not starting with a digit, e.g. OPENAI_API_KEY",
            )
        return value

    def base_url(self, node: Node | None, path: str) -> str | None:
        value = self.optional_text(node, path)
        if value is None or node is None:
            return None
        if not value.startswith(("http://", "https://")):
            self.fail(node, path, f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    def headers(self, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
        if node is None or self.is_null(node):
            return ()
        from yaml import MappingNode, ScalarNode

        if not isinstance(node, MappingNode):
            self.fail(node, path, f"expected a mapping of header: value, got {self.describe(node)}")
        out: list[tuple[str, str]] = []
        for key_node, value_node in self.pairs(node, path, fold=str.lower):
            if not isinstance(key_node, ScalarNode) or not re.match(
                _HEADER_NAME, str(key_node.value)
            ):
                self.fail(key_node, path, "a header name must be a plain token, e.g. X-Team")
            name = str(key_node.value)
            key_path = f"{path}.{name}"
            if name.lower() in _AUTH_HEADERS:
                self.fail(
                    key_node,
                    key_path,
                    "credentials never go in the config; the key comes from api_key_env",
                )
            out.append((name, self.text(value_node, key_path, secret=True)))
        return tuple(out)

    def log(self, node: Node) -> LogSettings:
        entries = self.mapping(node, "log", _LOG_KEYS, where=" in log")
        settings = LogSettings()
        for key, (_, value) in entries.items():
            key_path = f"log.{key}"
            if key == "enabled":
                settings = replace(settings, enabled=self.boolean(value, key_path))
            elif key == "include_text":
                settings = replace(settings, include_text=self.boolean(value, key_path))
            elif key == "max_bytes":
                settings = replace(settings, max_bytes=self.integer(value, key_path, minimum=1))
            else:
                settings = replace(settings, path=self.path_value(value, key_path))
        return settings
