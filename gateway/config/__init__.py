"""The YAML configuration, loaded into frozen records and validated with file:line errors.

    model     the records (Config, Deployment, Policy, Price, Limits, LogSettings,
              ArticleSettings, AnswerSettings) and ConfigError
    find      which config file to use, and where the cooldown state lives
    load      a file or the bundled default -> Config, through the cache
    cache     validated configs kept in the user cache dir, keyed by file and code
    validate  YAML text -> Config, every error naming file:line and key, read by
              walk (the YAML nodes and their lines), sections, deployments and limits

Every engine run imports the records; the rest is the CLI's, imported on first use, and
`validate` (with yaml) only when a config changed since it was cached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config.model import (
    BUNDLED_SOURCE,
    AnswerSettings,
    ArticleSettings,
    CitationStyle,
    Config,
    ConfigError,
    Deployment,
    KeyStrategy,
    Limits,
    LogSettings,
    Policy,
    Price,
    StateSettings,
)

if TYPE_CHECKING:
    from gateway.config.find import (
        APP_NAME,
        CONFIG_ENV,
        STATE_ENV,
        find_config,
        local_state_path,
        resolve_state,
        user_config_file,
    )
    from gateway.config.load import default_config_text, load_config, load_default_config
    from gateway.config.validate import load_config_text

__all__ = [
    "APP_NAME",
    "BUNDLED_SOURCE",
    "CONFIG_ENV",
    "STATE_ENV",
    "AnswerSettings",
    "ArticleSettings",
    "CitationStyle",
    "Config",
    "ConfigError",
    "Deployment",
    "KeyStrategy",
    "Limits",
    "LogSettings",
    "Policy",
    "Price",
    "StateSettings",
    "default_config_text",
    "find_config",
    "load_config",
    "load_config_text",
    "load_default_config",
    "local_state_path",
    "resolve_state",
    "user_config_file",
]

# Name -> the module that defines it (or module.name, where it is called otherwise there),
# for every name not imported above. The key tables are the validator's, and here only for
# the README's test of the config reference.
_LAZY = {
    "APP_NAME": "find",
    "CONFIG_ENV": "find",
    "STATE_ENV": "find",
    "find_config": "find",
    "resolve_state": "find",
    "local_state_path": "find",
    "user_config_file": "find",
    "default_config_text": "load",
    "load_config": "load",
    "load_default_config": "load",
    "load_config_text": "validate",
    "_TOP_KEYS": "validate",
    "_POLICY_KEYS": "sections.POLICY_KEYS",
    "_DEPLOYMENT_KEYS": "deployments",
    "_STATE_KEYS": "sections",
    "_LOG_KEYS": "sections",
    "_ARTICLES_KEYS": "sections",
    "_PRIVACY_KEYS": "sections",
    "_ANSWERS_KEYS": "sections",
    "_LIMITS_KEYS": "limits.LIMITS_KEYS",
}

if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> object:
        where = _LAZY.get(name)
        if where is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        module, _, defined = where.partition(".")
        value = getattr(import_module(f"{__name__}.{module}"), defined or name)
        globals()[name] = value  # found once; later lookups do not come here
        return value
