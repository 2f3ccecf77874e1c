"""The config's key variables checked against the environment, when a command runs.

A key's value is never part of the validated (and cached) config: it is read from the
environment each time a command is about to call, so this check runs then, every time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gateway.config.model import Config, ConfigError, Deployment
from gateway.secrets.key import KeyValueError, read_key


def _keyed(config: Config) -> Iterator[tuple[str, Deployment]]:
    """Each deployment that reads a key, with its key path in the config."""
    named = [(f"deployments[{i}]", d) for i, d in enumerate(config.deployments)]
    if config.long_context is not None:
        named.append(("long_context", config.long_context))
    for path, d in named:
        if not d.provider.offline and d.api_key_env:
            yield path, d


def key_errors(config: Config, environ: Mapping[str, str]) -> list[ConfigError]:
    """One error per key variable whose value cannot be a key (`gateway.secrets.key.key_problem`).

    Each names the config file, the key path and the variable, never the value.
    """
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for path, d in _keyed(config):
        for variable in d.key_variables:
            if variable in seen:
                continue  # one variable shared by several deployments: said once
            seen.add(variable)
            try:
                read_key(environ, variable)
            except KeyValueError as exc:
                errors.append(
                    ConfigError(
                        f"{exc}, so no request was sent; fix: set {exc.variable} to the key "
                        "alone, one line of visible ASCII characters (a key file read with "
                        f"its newline: export {exc.variable}=\"$(tr -d '\\r\\n' < FILE)\")",
                        file=config.source,
                        key=f"{path}.api_key_env",
                    )
                )
    return errors


def check_keys(config: Config, environ: Mapping[str, str]) -> None:
    """Raise the first key problem as a ConfigError (exit 78) before anything is called."""
    errors = key_errors(config, environ)
    if errors:
        raise errors[0]
