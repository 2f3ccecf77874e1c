"""A config file, or the bundled default, as a validated Config: from the cache when it is
unchanged since it was last validated, else read and validated (and cached)."""

from __future__ import annotations

from pathlib import Path

from gateway.config import cache
from gateway.config.model import BUNDLED_SOURCE, Config, ConfigError

_DEFAULT_FILE = "default_config.yaml"  # in the gateway package; the same bytes as sample-config


def load_config(path: Path) -> Config:
    """Read and validate a config file; relative paths inside it are relative to its folder.

    A config validated before and unchanged since comes from the cache."""
    key = cache.file_key(path)
    cached = cache.lookup(key)
    if cached is not None:
        return cached
    try:
        config = _load_config_file(path)
    except ConfigError:
        cache.forget(key)
        raise
    cache.store(key, config)
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
    from gateway.config import validate

    return validate.load_config_text(text, str(path), base_dir=path.expanduser().absolute().parent)


def _default_file() -> Path:
    return Path(__file__).parent.parent / _DEFAULT_FILE


def default_config_text() -> str:
    """The bundled default's text, comments and all (what `config init` writes)."""
    try:
        # A plain file in every ordinary install; importlib.resources costs ~1 ms.
        return _default_file().read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # imported from a zip, say
        from importlib.resources import files

        return files("gateway").joinpath(_DEFAULT_FILE).read_text(encoding="utf-8")


def load_default_config() -> Config:
    """The bundled default (identical to sample-config.yaml): ends in the offline deployment."""
    key = cache.bundled_key(_default_file())
    cached = cache.lookup(key)
    if cached is not None:
        return cached
    text = default_config_text()
    from gateway.config import validate

    config = validate.load_config_text(text, BUNDLED_SOURCE)
    if not _has_paths(config):  # relative ones would depend on the current folder
        cache.store(key, config)
    return config


def _has_paths(config: Config) -> bool:
    return any(p is not None for p in (config.prompt, config.state_path, config.log.path))
