"""Which config file to use and where the cooldown state lives: flag, variable, file, user dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gateway.config.model import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.config.location import RedisURL
    from gateway.config.model import Config

CONFIG_ENV = "SUPPORT_ASK_CONFIG"
STATE_ENV = "SUPPORT_ASK_STATE"
APP_NAME = "support-ask"  # the folder's name in each platformdirs user dir
# Linux: each user dir's XDG variable and its default when the variable is unset.
_XDG = {
    "config": ("XDG_CONFIG_HOME", "~/.config"),
    "state": ("XDG_STATE_HOME", "~/.local/state"),
    "cache": ("XDG_CACHE_HOME", "~/.cache"),
}
UserDir = Literal["config", "state", "cache", "log"]


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
    user = user_config_file()
    return user if user.is_file() else None


def user_config_file() -> Path:
    """The config in the platformdirs user config dir: the last place searched."""
    return user_dir("config") / "config.yaml"


def user_dir(kind: UserDir) -> Path:
    """support-ask's platformdirs user dir of that kind (log: the state dir's `log`).

    On Linux the plain cases, an absolute XDG variable or none with an absolute $HOME, are
    answered here as platformdirs answers them: every run that names no config, state or
    log path needs these dirs, and importing platformdirs (tempfile, shutil, lzma) costs
    ~24 M instructions, a twentieth of an offline answer. Anything else (a relative
    variable, no usable $HOME, another system) is platformdirs' to answer.
    """
    if sys.platform.startswith("linux"):
        variable, default = _XDG["state" if kind == "log" else kind]
        base = os.environ.get(variable, "")
        if not os.path.isabs(base):
            plain = not base and os.path.isabs(os.environ.get("HOME", ""))
            base = os.path.expanduser(default) if plain else ""
        if base:
            found = Path(base, APP_NAME)
            return found / "log" if kind == "log" else found
    import platformdirs

    if kind == "config":
        return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))
    if kind == "state":
        return Path(platformdirs.user_state_dir(APP_NAME, appauthor=False))
    if kind == "cache":
        return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
    return Path(platformdirs.user_log_dir(APP_NAME))


def resolve_state(flag: str | None, environ: Mapping[str, str], config: Config) -> Path | RedisURL:
    """Where the shared state lives: --state, $SUPPORT_ASK_STATE, state.url, state.path,
    the user state dir. A redis:// or rediss:// URL selects Redis, a path the file store.
    Raises LocationError (naming no password) for a URL that cannot be used."""
    given = flag or environ.get(STATE_ENV)
    if given:
        if "://" not in given:  # a path: the common case needs no URL parsing at all
            return Path(given).expanduser()
        from gateway.config.location import parse_location

        return parse_location(given)
    if config.state.url is not None:
        return config.state.url
    return local_state_path(config)


def local_state_path(config: Config) -> Path:
    """The state file of this machine: state.path, else the user state dir's. It is also
    where cooldowns go while Redis is down."""
    if config.state_path is not None:
        return config.state_path
    return user_dir("state") / "cooldowns.json"
