"""The config loader: what a user sees when the YAML is right, and when it is wrong."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.config import (
    Config,
    ConfigError,
    Policy,
    Price,
    find_config,
    load_config,
    load_config_text,
    load_default_config,
    resolve_state,
)
from gateway.config import cache as config_cache
from gateway.config import validate as config_validate
from gateway.config.model import OFFLINE_WINDOW, RefreshRule
from gateway.model import ProviderKind
from tests.support.paths import REPO

ROOT = REPO
SAMPLE = ROOT / "sample-config.yaml"
BUNDLED = ROOT / "gateway" / "default_config.yaml"

GOOD = """\
product: Acme Cloud
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    context_window: 128000
  - name: local
    provider: local
    context_window: 1000000
"""


def write(tmp_path: Path, text: str, name: str = "support-ask.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# Each case is a whole config; the line the error must name carries the marker `#!`.
BAD = {
    "negative context window": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: -5   #!
        """,
        "deployments[0].context_window",
        "at least 1",
    ),
    "second deployment's window": (
        """
        product: X
        deployments:
          - {name: a, provider: local, context_window: 10}
          - name: b
            provider: local
            context_window: 0   #!
        """,
        "deployments[1].context_window",
        "at least 1",
    ),
    "bool is not an int": (
        """
        product: X
        max_output_tokens: true   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "max_output_tokens",
        "whole number",
    ),
    "quoted number": (
        """
        product: X
        policy:
          budget: "30"   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.budget",
        "remove the quotes",
    ),
    "float for an int": (
        """
        product: X
        policy:
          retries: 1.5   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.retries",
        "whole number",
    ),
    "negative budget": (
        """
        product: X
        policy:
          budget: -1   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.budget",
        "greater than 0",
    ),
    "zero timeout": (
        """
        product: X
        policy:
          timeout: 0   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.timeout",
        "greater than 0",
    ),
    "zero stall_timeout": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            policy:
              stall_timeout: 0   #!
        """,
        "deployments[0].policy.stall_timeout",
        "greater than 0",
    ),
    "negative first_token_timeout": (
        """
        product: X
        policy:
          first_token_timeout: -2   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.first_token_timeout",
        "greater than 0",
    ),
    "a price without its output rate": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            price: {input_per_mtok: 0.15}   #!
        """,
        "deployments[0].price.output_per_mtok",
        "missing",
    ),
    "a negative price": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            price:
              input_per_mtok: -1   #!
              output_per_mtok: 1
        """,
        "deployments[0].price.input_per_mtok",
        "at least 0",
    ),
    "a batch discount of more than the price": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            price:
              input_per_mtok: 1
              output_per_mtok: 1
              batch_discount: 1.5   #!
        """,
        "deployments[0].price.batch_discount",
        "a share from 0 to 1",
    ),
    "infinite budget": (
        """
        product: X
        policy:
          budget: .inf   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.budget",
        "finite",
    ),
    "negative retries": (
        """
        product: X
        policy:
          retries: -1   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.retries",
        "must be from 0 to 10, got -1",
    ),
    "retries past the bound": (
        """
        product: X
        policy:
          retries: 1000   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.retries",
        "must be from 0 to 10, got 1000",
    ),
    "a deployment's retries past the bound": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            policy: {retries: 11}   #!
        """,
        "deployments[0].policy.retries",
        "must be from 0 to 10",
    ),
    "backoff cap below base": (
        """
        product: X
        policy:
          backoff_base: 4
          backoff_max: 2   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.backoff_max",
        "less than backoff_base",
    ),
    "cooldown above max_cooldown": (
        """
        product: X
        policy:
          cooldown: 7200   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.cooldown",
        "more than max_cooldown (3600)",
    ),
    "quota_cooldown above a deployment's max_cooldown": (
        """
        product: X
        policy:
          quota_cooldown: 3600
        deployments:
          - name: a
            provider: local
            context_window: 10
            policy:
              max_cooldown: 600   #!
        """,
        "deployments[0].policy.max_cooldown",
        "quota_cooldown (3600) is more than max_cooldown (600)",
    ),
    "override makes cap below base": (
        """
        product: X
        policy:
          backoff_max: 2
        deployments:
          - name: a
            provider: local
            context_window: 10
            policy:
              backoff_base: 3   #!
        """,
        "deployments[0].policy.backoff_base",
        "less than backoff_base",
    ),
    "max_output_tokens zero": (
        """
        product: X
        max_output_tokens: 0   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "max_output_tokens",
        "at least 1",
    ),
    "typo at the top": (
        """
        product: X
        deployment:   #!
          - {name: a, provider: local, context_window: 10}
        """,
        "deployment",
        "did you mean 'deployments'?",
    ),
    "typo in policy": (
        """
        product: X
        policy:
          backof_max: 3   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "policy.backof_max",
        "did you mean 'backoff_max'?",
    ),
    "typo in a deployment": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_windw: 10   #!
        """,
        "deployments[0].context_windw",
        "did you mean 'context_window'?",
    ),
    "flat policy override": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            context_window: 10
            retries: 0   #!
        """,
        "deployments[0].retries",
        "policy: {retries: ...}",
    ),
    "typo in log": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        log:
          include_txt: true   #!
        """,
        "log.include_txt",
        "did you mean 'include_text'?",
    ),
    "log flag not a bool": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        log:
          enabled: 1   #!
        """,
        "log.enabled",
        "true or false",
    ),
    "state typo": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        state:
          file: x.json   #!
        """,
        "state.file",
        "valid keys: path",
    ),
    "empty deployment list": (
        """
        product: X
        deployments: []   #!
        """,
        "deployments",
        "empty",
    ),
    "deployments not a list": (
        """
        product: X
        deployments:   #!
          name: a
        """,
        "deployments",
        "expected a list",
    ),
    "missing deployments": (
        """
        product: X   #!
        """,
        "deployments",
        "required",
    ),
    "missing product": (
        """
        deployments: [{name: a, provider: local, context_window: 10}]   #!
        """,
        "product",
        "required",
    ),
    "duplicate names": (
        """
        product: X
        deployments:
          - {name: a, provider: local, context_window: 10}
          - {name: a, provider: local, context_window: 20}   #!
        """,
        "deployments[1].name",
        "already the name of deployments[0]",
    ),
    "long_context reuses a name": (
        """
        product: X
        deployments:
          - {name: a, provider: local, context_window: 10}
        long_context:
          name: a   #!
          provider: local
          context_window: 20
        """,
        "long_context.name",
        "already the name of deployments[0]",
    ),
    "a name unusable on the command line": (
        """
        product: X
        deployments:
          - {name: "a=b", provider: local, context_window: 10}   #!
        """,
        "deployments[0].name",
        "letters, digits",
    ),
    "unknown provider": (
        """
        product: X
        deployments:
          - name: a
            provider: opnai   #!
            model: m
            context_window: 10
        """,
        "deployments[0].provider",
        "(did you mean 'openai'?); valid: openai, azure, anthropic, gemini, local",
    ),
    "hosted provider without a model": (
        """
        product: X
        deployments:
          - name: a   #!
            provider: anthropic
            api_key_env: ANTHROPIC_API_KEY
            context_window: 10
        """,
        "deployments[0].model",
        "need a model",
    ),
    "hosted provider without a key variable": (
        """
        product: X
        deployments:
          - name: a   #!
            provider: gemini
            model: gemini-2.5-flash
            context_window: 10
        """,
        "deployments[0].api_key_env",
        "environment variable",
    ),
    "azure without base_url": (
        """
        product: X
        deployments:
          - name: a   #!
            provider: azure
            model: my-deployment
            api_key_env: AZURE_OPENAI_API_KEY
            api_version: 2024-10-21
            context_window: 10
        """,
        "deployments[0].base_url",
        "azure needs the resource endpoint",
    ),
    "azure without api_version": (
        """
        product: X
        deployments:
          - name: a   #!
            provider: azure
            model: my-deployment
            api_key_env: AZURE_OPENAI_API_KEY
            base_url: https://r.openai.azure.com
            context_window: 10
        """,
        "deployments[0].api_version",
        "azure needs the API version",
    ),
    "api_version on a non-azure deployment": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            api_version: 2024-10-21   #!
            context_window: 10
        """,
        "deployments[0].api_version",
        "only azure",
    ),
    "a key for the local provider": (
        """
        product: X
        deployments:
          - name: a
            provider: local
            api_key_env: OPENAI_API_KEY   #!
            context_window: 10
        """,
        "deployments[0].api_key_env",
        "needs no key",
    ),
    "env var name with a dash": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI-KEY   #!
            context_window: 10
        """,
        "deployments[0].api_key_env",
        "not an environment variable name",
    ),
    "base_url without a scheme": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: api.example.com/v1   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "http:// or https://",
    ),
    "base_url with a user and password": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://me:Pa55-word-x9@llm.example/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with a bare token as user": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://tok3n-abcdef@llm.example/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with ?api_key=": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example/v1?api_key=abcdef123456"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with ?key=": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://generativelanguage.googleapis.com/v1beta?key=AIzaSyD4kz9Qx7"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with ?access_token=": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example/v1?team=a&access_token=abc"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with a key-shaped query value": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example/v1?x=sk-proj-Zq8v3KxT1mN4bR7wY2c"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "name that variable with api_key_env",
    ),
    "base_url with another query": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example/v1?region=eu"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "takes no query",
    ),
    "base_url with a fragment": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example/v1#top"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "takes no fragment",
    ),
    "base_url with a port that is not a number": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example:80a/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "port",
    ),
    "base_url with a port out of range": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example:99999/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "port",
    ),
    "base_url with port zero": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "http://127.0.0.1:0/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "port",
    ),
    "base_url with a space": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm.example /v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "no spaces",
    ),
    "base_url with no host": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https:///v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "no host",
    ),
    "base_url with a bad host": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "https://llm_ex!ample/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "not a host name",
    ),
    "base_url of another scheme": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            base_url: "ftp://llm.example/v1"   #!
            context_window: 10
        """,
        "deployments[0].base_url",
        "http:// or https://",
    ),
    "headers not a mapping": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            context_window: 10
            headers: [X-Team]   #!
        """,
        "deployments[0].headers",
        "mapping",
    ),
    "a credential in a header": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            context_window: 10
            headers:
              Authorization: Bearer abc   #!
        """,
        "deployments[0].headers.Authorization",
        "credentials never go in the config",
    ),
    "a header value on two lines": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            context_window: 10
            headers:
              X-Team: "support\\nX-Injected: yes"   #!
        """,
        "deployments[0].headers.X-Team",
        "one line of visible ASCII text",
    ),
    "a header value with a typographic quote": (
        """
        product: X
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            context_window: 10
            headers:
              X-Team: “support”   #!
        """,
        "deployments[0].headers.X-Team",
        "one line of visible ASCII text",
    ),
    "fallback rate above one": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        max_fallback_rate: 20   #!
        """,
        "max_fallback_rate",
        "between 0 and 1",
    ),
    "a key given twice": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        product: Y   #!
        """,
        "product",
        "given twice (first on line 2)",
    ),
    "missing prompt file": (
        """
        product: X
        prompt: prompts/mine.md   #!
        deployments: [{name: a, provider: local, context_window: 10}]
        """,
        "prompt",
        "relative to the config file's folder",
    ),
    "min_relevance above 1": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          min_relevance: 40   #!
        """,
        "articles.min_relevance",
        "must be from 0 to 1 (a share), got 40",
    ),
    "min_relevance negative": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          min_relevance: -0.1   #!
        """,
        "articles.min_relevance",
        "must be at least 0",
    ),
    "min_relevance quoted": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          min_relevance: "0.3"   #!
        """,
        "articles.min_relevance",
        "(remove the quotes)",
    ),
    "long_context not a mapping": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        long_context: gemini   #!
        """,
        "long_context",
        "expected a mapping",
    ),
    "citations neither markers nor none": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        answers:
          citations: off   #!
        """,
        "answers.citations",
        "expected one of markers, none",
    ),
    "refresh not one of its rules": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          refresh: hourly   #!
        """,
        "articles.refresh",
        "expected one of every_question, on_index, got text 'hourly' (`on_index` trusts",
    ),
    "refresh a boolean": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          refresh: no   #!
        """,
        "articles.refresh",
        "expected one of every_question, on_index, got a true/false value",
    ),
    "require_citation not a boolean": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        answers:
          require_citation: always   #!
        """,
        "answers.require_citation",
        "expected true or false",
    ),
    "empty handoff message": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        answers:
          handoff_message: "  "   #!
        """,
        "answers.handoff_message",
        "must not be empty",
    ),
    "misspelt answers key": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        answers:
          require_citations: true   #!
        """,
        "answers.require_citations",
        "did you mean 'require_citation'",
    ),
    "url_base not a web address": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          url_base: help.acme.com/kb   #!
        """,
        "articles.url_base",
        "expected an http:// or https:// URL",
    ),
    "url_base with a query": (
        """
        product: X
        deployments: [{name: a, provider: local, context_window: 10}]
        articles:
          url_base: https://help.acme.com/kb?lang=en   #!
        """,
        "articles.url_base",
        "remove the query",
    ),
}


@pytest.mark.parametrize(("snippet", "key", "fragment"), BAD.values(), ids=BAD.keys())
def test_each_config_error_names_the_file_line_and_key(
    tmp_path: Path, snippet: str, key: str, fragment: str
) -> None:
    path = write(tmp_path, snippet)
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "#!" in text)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    error = caught.value
    assert (error.file, error.line, error.key) == (str(path), line, key)
    assert fragment in error.message
    assert str(error).startswith(f"{path}:{line}: {key}: ")
    # The one mistake, not also its echoes (a misspelt key reported again as missing).
    assert error.problems == (error,), str(error)


def test_answers_and_url_base_read_as_written_with_defaults_for_what_is_left_out(
    tmp_path: Path,
) -> None:
    from gateway.config import AnswerSettings, CitationStyle

    assert load_config(write(tmp_path, GOOD)).answers == AnswerSettings()
    assert load_config(write(tmp_path, GOOD)).articles.url_base is None
    text = GOOD + (
        "articles: {url_base: 'https://help.acme.example/kb/'}\n"
        "answers:\n  citations: none\n  handoff_message: |\n    A person will reply\n"
        "    within the hour.\n"
    )
    config = load_config(write(tmp_path, text))
    assert config.articles.url_base == "https://help.acme.example/kb/"
    assert config.answers == AnswerSettings(
        citations=CitationStyle.NONE,
        require_citation=False,
        handoff_message="A person will reply within the hour.",
    )


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        prodct: X
        policy:
          retries: -1
          budget: 0
        deployments:
          - name: a
            provider: openai
            model: m
            api_key_env: OPENAI_API_KEY
            context_window: zero
          - name: b
            provider: anthropc
            context_window: 10
          - name: c
            provider: local
            context_window: 10
        max_fallback_rate: 3
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)

    found = [(p.line, p.key) for p in caught.value.problems]
    assert found == [
        (2, "prodct"),
        (4, "policy.retries"),
        (5, "policy.budget"),
        (11, "deployments[0].context_window"),
        (13, "deployments[1].provider"),
        (18, "max_fallback_rate"),
    ]
    assert str(caught.value).splitlines() == [str(p) for p in caught.value.problems]
    assert all(p.file == str(path) for p in caught.value.problems)


# Errors with no key: the file as a whole is wrong.
WHOLE_FILE = {
    "empty file": ("", 1, "empty"),
    "only comments": ("# nothing yet\n", 1, "empty"),
    "top level is a list": ("- product: X\n", 1, "top level must be a mapping"),
    "top level is text": ("support-ask\n", 1, "top level must be a mapping"),
    "unclosed flow": ("product: X\ndeployments: [\n  {name: a}\n", 4, "invalid YAML"),
    "bad indentation": ("product: X\n  deployments: []\n", 2, "invalid YAML"),
    "tab indentation": ("product: X\ndeployments:\n\t- a\n", 3, "invalid YAML"),
    "two documents": ("product: X\n---\nproduct: Y\n", 2, "invalid YAML"),
}


@pytest.mark.parametrize(("text", "line", "fragment"), WHOLE_FILE.values(), ids=WHOLE_FILE.keys())
def test_a_broken_file_is_an_error_with_its_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "support-ask.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert (caught.value.file, caught.value.line) == (str(path), line)
    assert fragment in caught.value.message


def test_a_missing_file_says_so_and_how_to_fix_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.file == str(path)
    assert "no such config file" in caught.value.message
    assert "fix:" in caught.value.message


def test_a_directory_or_non_utf8_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"product: X\nproduct2: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8") as caught:
        load_config(path)
    assert caught.value.line == 2


def test_an_unreadable_file_is_an_error_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, GOOD)

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    # Root reads any file, so a chmod cannot show this in CI: the refusal is injected.
    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.file == str(path)
    assert "permission denied" in caught.value.message
    assert f"fix: chmod u+r {path}" in caught.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_for_real(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    path.chmod(0)
    with pytest.raises(ConfigError, match="permission denied"):
        load_config(path)


# -- secrets never echoed ------------------------------------------------------------------

FAKE_KEY = "sk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6"


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        (f"api_key_env: {FAKE_KEY}", FAKE_KEY),
        (
            "api_key_env: AIzaSyD4kz9Qx7Lm2Np5Rt8Vw1Yb3Cd6Ef9Gh0J",
            "AIzaSyD4kz9Qx7Lm2Np5Rt8Vw1Yb3Cd6Ef9",
        ),
        (
            "api_key_env: 9f8e7d6c5b4a39281706f5e4d3c2b1a0Aa99",
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0Aa99",
        ),
        ("api_key_env: my-key-9f8e7d", "my-key-9f8e7d"),
        (f"api_key: {FAKE_KEY}", FAKE_KEY),
        (f"{FAKE_KEY}: x", FAKE_KEY),
        (f"max_output_tokens: {FAKE_KEY}", FAKE_KEY),
        (f"headers: {{Authorization: Bearer {FAKE_KEY}}}", FAKE_KEY),
        (f"headers: {{X-Team: [{FAKE_KEY}]}}", FAKE_KEY),
    ],
)
def test_a_key_pasted_into_the_config_is_an_error_that_never_shows_it(
    tmp_path: Path, line: str, secret: str
) -> None:
    text = GOOD.replace("api_key_env: OPENAI_API_KEY", line)
    assert secret in text
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert secret not in str(caught.value)
    assert caught.value.key is not None and caught.value.key.startswith("deployments[0]")
    assert caught.value.line == 6


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://me:Pa55-word-x9@llm.example/v1", "Pa55-word-x9"),
        ("me:Pa55-word-x9@llm.example/v1", "Pa55-word-x9"),  # no scheme either
        ("https://llm.example:8o80/v1?api_key=Pa55-word-x9", "Pa55-word-x9"),
        ("https://llm.example/v1?key=Pa55-word-x9", "Pa55-word-x9"),
        ("https://llm.example /v1?key=Pa55-word-x9", "Pa55-word-x9"),
    ],
)
def test_a_credential_in_base_url_is_refused_and_never_shown(
    tmp_path: Path, url: str, secret: str, validations: list[str]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(GOOD.replace("api_key_env: OPENAI_API_KEY", f"base_url: '{url}'"))
    for _ in range(2):  # refused every time: a config that fails is never cached
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        assert (caught.value.key, caught.value.line) == ("deployments[0].base_url", 6)
        assert secret not in str(caught.value)
    assert len(validations) == 2


def test_a_good_base_url_keeps_its_path_and_port(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    for url in ("http://127.0.0.1:11434/v1/", "https://[::1]:8443/openai", "https://LLM.example"):
        path.write_text(GOOD.replace("api_key_env: OPENAI_API_KEY", f"base_url: '{url}'"))
        assert load_config_text(path.read_text(), "c").deployments[0].base_url == url.rstrip("/")


# -- what a good config becomes ------------------------------------------------------------


def test_per_deployment_policy_merges_field_by_field_over_the_top_level(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        product: Acme
        policy:
          retries: 3
          timeout: 10
        deployments:
          - name: fast
            provider: local
            context_window: 10
            policy: {retries: 0, cooldown: 5, first_token_timeout: 2.5, stall_timeout: 1}
          - name: plain
            provider: local
            context_window: 10
        long_context:
          name: big
          provider: local
          context_window: 100
          policy:
            budget: 90
        """,
    )
    config = load_config(path)
    top = Policy(retries=3, timeout=10)
    assert config.policy == top
    fast, plain = config.deployments
    assert fast.policy == Policy(
        retries=0, cooldown=5, timeout=10, first_token_timeout=2.5, stall_timeout=1
    )
    assert plain.policy == top
    assert config.long_context is not None
    assert config.long_context.policy == Policy(retries=3, timeout=10, budget=90)


def test_a_deployment_price_is_read_in_dollars_per_million_tokens(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        product: Acme
        deployments:
          - name: priced
            provider: local
            context_window: 10
            price: {input_per_mtok: 0.15, output_per_mtok: 0.6}
          - name: free
            provider: local
            context_window: 10
        """,
    )
    priced, free = load_config(path).deployments
    assert priced.price == Price(input_per_mtok=0.15, output_per_mtok=0.6)
    assert priced.price.cost_usd(1_000_000, 500_000) == pytest.approx(0.45)
    assert priced.price.batch_cost_usd(1_000_000, 500_000) == pytest.approx(0.225)  # half off
    assert free.price is None
    assert load_config(path).deployments[0].price == priced.price  # from the cache too


def test_a_price_may_name_its_own_batch_discount(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        product: Acme
        deployments:
          - name: priced
            provider: local
            context_window: 10
            price: {input_per_mtok: 1.0, output_per_mtok: 1.0, batch_discount: 0.25}
        """,
    )
    price = load_config(path).deployments[0].price
    assert price is not None and price.batch_discount == 0.25
    assert price.batch_cost_usd(1_000_000, 0) == pytest.approx(0.75)
    assert load_config(path).deployments[0].price == price  # from the cache too


def test_defaults_fill_in_what_the_file_leaves_out(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.policy == Policy(
        retries=2, backoff_base=1.0, backoff_max=8.0, cooldown=60, budget=30, timeout=20
    )
    assert config.max_output_tokens == 400
    assert config.long_context is None
    assert config.state_path is None and config.prompt is None
    assert config.max_fallback_rate is None
    assert config.source == str(tmp_path / "support-ask.yaml")
    assert [d.name for d in config.all_deployments()] == ["primary", "local"]


def test_paths_are_relative_to_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "conf"
    (folder / "prompts").mkdir(parents=True)
    (folder / "prompts" / "mine.md").write_text("Be brief.")
    write(
        folder,
        GOOD
        + "prompt: prompts/mine.md\nstate:\n  path: ~/state/c.json\n"
        + "log:\n  path: logs/a.jsonl\n  include_text: true\n  max_bytes: 1_000\n",
    )
    monkeypatch.chdir(tmp_path)  # somewhere else: the config's folder still anchors its paths
    config = load_config(Path("conf/support-ask.yaml"))
    assert config.prompt == folder / "prompts" / "mine.md"
    assert config.state_path == home / "state" / "c.json"
    assert config.log.path == folder / "logs" / "a.jsonl"
    assert config.log.include_text is True and config.log.max_bytes == 1000


def test_text_fields_keep_what_was_typed(tmp_path: Path) -> None:
    # Unquoted, YAML would read these as a date and a number; the user meant the text.
    path = write(
        tmp_path,
        """
        product: 2024
        deployments:
          - name: az
            provider: azure
            model: 4.1
            api_key_env: AZURE_OPENAI_API_KEY
            base_url: https://r.openai.azure.com/
            api_version: 2024-10-21
            context_window: 128_000
            headers: {X-Team: 7}
        """,
    )
    (d,) = load_config(path).deployments
    assert load_config(path).product == "2024"
    assert (d.model, d.api_version, d.context_window) == ("4.1", "2024-10-21", 128000)
    assert d.base_url == "https://r.openai.azure.com"
    assert d.headers == (("X-Team", "7"),)
    assert d.provider is ProviderKind.AZURE


def test_an_openai_compatible_server_of_ones_own_needs_no_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        product: X
        deployments:
          - {name: ollama, provider: openai, model: llama3, base_url: "http://127.0.0.1:11434/v1",
             context_window: 8192}
        """,
    )
    (d,) = load_config(path).deployments
    assert d.api_key_env is None and d.base_url == "http://127.0.0.1:11434/v1"


def test_yaml_anchors_and_merge_keys_share_settings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        product: X
        deployments:
          - &openai {name: a, provider: openai, model: m, api_key_env: K, context_window: 10}
          - <<: *openai
            name: b
        """,
    )
    _, b = load_config(path).deployments
    assert (b.name, b.model, b.api_key_env) == ("b", "m", "K")


# -- the sample and the bundled default ----------------------------------------------------


def test_the_bundled_default_is_the_sample_byte_for_byte() -> None:
    assert BUNDLED.read_bytes() == SAMPLE.read_bytes()


def test_the_sample_and_the_bundled_default_load_alike() -> None:
    sample = load_config(SAMPLE)
    bundled = load_default_config()
    assert bundled.source == "<bundled default>"
    assert sample.source == str(SAMPLE)
    assert bundled == Config(**{**vars(sample), "source": "<bundled default>"})
    assert [
        (d.name, d.provider, d.model, d.api_key_env, d.context_window) for d in bundled.deployments
    ] == [
        ("primary", ProviderKind.OPENAI, "gpt-4o-mini", "OPENAI_API_KEY", 128000),
        ("fallback", ProviderKind.ANTHROPIC, "claude-haiku-4-5", "ANTHROPIC_API_KEY", 200000),
        ("local", ProviderKind.LOCAL, None, None, OFFLINE_WINDOW),  # it needs none
    ]
    long = bundled.long_context
    assert long is not None
    assert (long.name, long.provider, long.model, long.api_key_env, long.context_window) == (
        "long",
        ProviderKind.GEMINI,
        "gemini-2.5-pro",
        "GEMINI_API_KEY",
        1000000,
    )


def test_the_sample_shows_every_key() -> None:
    text = SAMPLE.read_text()
    for key in (
        "product:", "prompt:", "max_output_tokens:", "policy:", "retries:", "backoff_base:",
        "backoff_max:", "cooldown:", "budget:", "timeout:", "first_token_timeout:",
        "stall_timeout:", "deployments:", "long_context:",
        "state:", "path:", "log:", "enabled:", "include_text:", "max_bytes:",
        "max_fallback_rate:", "quota_cooldown:", "max_cooldown:", "name:", "provider:",
        "model:", "api_key_env:", "base_url:", "api_version:", "context_window:", "headers:",
        "url_base:", "answers:", "citations:", "require_citation:", "handoff_message:",
    ):  # fmt: skip
        assert re.search(rf"^\s*(#\s*)?(- )?{key}", text, re.M), key


def test_the_samples_commented_examples_are_valid_when_uncommented(tmp_path: Path) -> None:
    # Uncomment every YAML line inside the deployment list (prose comments stay comments).
    out, inside = [], False
    for line in SAMPLE.read_text().splitlines():
        if line.startswith(("deployments:", "long_context:")):
            inside = line.startswith("deployments:")
        match = re.match(r"^(\s*)# (\s*(- )?[A-Za-z_-]+:.*)$", line)
        out.append(f"{match[1]}{match[2]}" if inside and match else line)
    path = tmp_path / "uncommented.yaml"
    path.write_text("\n".join(out) + "\n")
    config = load_config(path)
    primary, _, large, azure, _ = config.deployments
    assert (large.provider, large.api_key_env) == (primary.provider, primary.api_key_env)
    assert primary.headers == (("X-Team", "support"),)
    assert (primary.policy.retries, primary.policy.timeout) == (1, 10)
    assert primary.policy.budget == config.policy.budget
    assert (azure.provider, azure.api_version) == (ProviderKind.AZURE, "2024-10-21")


# -- where the config and the state live ---------------------------------------------------


@pytest.fixture
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """platformdirs' user dirs, moved under tmp_path (XDG on Linux)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    return tmp_path


def test_find_config_order_flag_env_cwd_user_dir(user_dirs: Path) -> None:
    cwd = user_dirs / "work"
    cwd.mkdir()
    user = user_dirs / "xdg-config" / "support-ask" / "config.yaml"
    by_flag, by_env, local = (write(user_dirs, GOOD, n) for n in ("f.yaml", "e.yaml", "l.yaml"))

    assert find_config(None, {}, cwd) is None
    user.parent.mkdir(parents=True)
    user.write_text(GOOD)
    assert find_config(None, {}, cwd) == user
    (cwd / "support-ask.yaml").write_text(GOOD)
    assert find_config(None, {}, cwd) == cwd / "support-ask.yaml"
    env = {"SUPPORT_ASK_CONFIG": str(by_env)}
    assert find_config(None, env, cwd) == by_env
    assert find_config(by_flag, env, cwd) == by_flag
    assert (
        find_config(Path("../l.yaml"), env, cwd)
        == cwd / "../l.yaml"
        == local.parent / "work/../l.yaml"
    )
    assert find_config(None, {"SUPPORT_ASK_CONFIG": ""}, cwd) == cwd / "support-ask.yaml"


@pytest.mark.parametrize("via", ["flag", "env"])
def test_a_named_config_that_is_missing_is_an_error_not_a_fallthrough(
    user_dirs: Path, via: str
) -> None:
    (user_dirs / "support-ask.yaml").write_text(GOOD)  # would be found without the name
    missing = user_dirs / "typo.yaml"
    flag = missing if via == "flag" else None
    env = {"SUPPORT_ASK_CONFIG": str(missing)} if via == "env" else {}
    with pytest.raises(ConfigError) as caught:
        find_config(flag, env, user_dirs)
    assert caught.value.file == str(missing)
    assert ("--config" if via == "flag" else "$SUPPORT_ASK_CONFIG") in caught.value.message


def test_state_order_flag_env_config_user_dir(user_dirs: Path) -> None:
    plain = load_config_text(GOOD, "t.yaml")
    configured = load_config_text(GOOD + "state: {path: /srv/c.json}\n", "t.yaml")
    redis = load_config_text(GOOD + "state: {url: 'redis://u:pw@cache:6380/3'}\n", "t.yaml")
    env = {"SUPPORT_ASK_STATE": "/env/c.json"}

    default = user_dirs / "xdg-state" / "support-ask" / "cooldowns.json"
    assert resolve_state(None, {}, plain) == default
    assert resolve_state(None, {}, configured) == Path("/srv/c.json")
    assert resolve_state(None, env, configured) == Path("/env/c.json")
    assert resolve_state("/flag/c.json", env, configured) == Path("/flag/c.json")
    assert str(resolve_state(None, {}, redis)) == "redis://cache:6380/3"
    assert resolve_state(None, env, redis) == Path("/env/c.json"), "the variable wins"
    url = {"SUPPORT_ASK_STATE": "rediss://a:pw@h:1/0"}
    assert str(resolve_state(None, url, plain)) == "rediss://h:1/0", "a URL selects Redis"
    assert str(resolve_state("redis://h/2", url, plain)) == "redis://h:6379/2"


def test_state_settings_are_validated_and_the_password_never_shown(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            GOOD + "state: {url: 'redis://bot:S3cret-pw@h:6380/1', prefix: team-a, "
            "connect_timeout: 0.1, timeout: 0.5}\n",
        )
    )
    assert config.state.url is not None and config.state.url.shown == "redis://h:6380/1"
    assert (config.state.prefix, config.state.connect_timeout, config.state.timeout) == (
        "team-a",
        0.1,
        0.5,
    )
    assert "S3cret-pw" not in repr(config)
    for bad, fragment in (
        ("{url: 'redis://bot:S3cret-pw@h:99999/1'}", "not a valid Redis URL"),
        ("{url: 'http://bot:S3cret-pw@h/1'}", "redis:// or rediss://"),
        ("{url: 'redis://bot:S3cret-pw@h/x'}", "must be a number"),
        ("{url: 'redis://h/0', path: /tmp/x.json}", "not both"),
        ("{prefix: 'a b'}", "not a usable prefix"),
        ("{timeout: 30}", "at most 5"),
        ("{connect_timeout: 0}", "greater than 0"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_config(write(tmp_path, GOOD + f"state: {bad}\n", name=f"s{len(bad)}.yaml"))
        assert fragment in str(caught.value) and "S3cret-pw" not in str(caught.value)
        assert (caught.value.key or "").startswith("state.")


def test_a_config_with_a_redis_url_is_never_cached(
    tmp_path: Path, private_cache: Path, validations: list[str]
) -> None:
    path = write(tmp_path, GOOD + "state: {url: 'redis://bot:S3cret-pw@h:6380/1'}\n")
    load_config(path)
    load_config(path)
    assert len(validations) == 2, "validated each time: the URL is not copied anywhere"
    folder = private_cache.parent
    assert not any(b"S3cret-pw" in p.read_bytes() for p in folder.rglob("*") if p.is_file())
    plain = write(tmp_path, GOOD, name="plain.yaml")
    load_config(plain)
    load_config(plain)
    assert len(validations) == 3, "a config without a URL is still cached"


# -- the cache of validated configs --------------------------------------------------------
#
# Every question loads the config; a file validated before and unchanged since is read from
# the user cache dir instead of parsed again (no yaml import at all).

EVERYTHING = """\
product: Acme Cloud
prompt: mine.md
max_output_tokens: 300
max_fallback_rate: 0.25
policy: {retries: 1, backoff_base: 0.5, backoff_max: 4, cooldown: 30, budget: 20, timeout: 9}
deployments:
  - name: primary
    provider: azure
    model: gpt-4o-mini
    api_key_env: AZURE_OPENAI_API_KEY
    base_url: https://acme.openai.azure.com
    api_version: 2024-10-21
    context_window: 128000
    policy: {retries: 3}
  - name: local
    provider: local
    context_window: 1000000
long_context:
  name: long
  provider: gemini
  model: gemini-2.5-pro
  api_key_env: GEMINI_API_KEY
  context_window: 1000000
state:
  path: ~/state/cooldowns.json
log:
  enabled: false
  path: logs/attempts.jsonl
  include_text: true
  max_bytes: 1000
articles:
  url_base: https://help.acme.example/kb
  refresh: on_index
answers:
  citations: none
  require_citation: true
  handoff_message:
    en: A person from our team will reply shortly.
    de: Ein Mitarbeiter antwortet Ihnen in Kürze.
  languages: [en, de]
  default_language: en
  phrases:
    from_article: {en: "See {title}:", de: "Siehe {title}:"}
    sources: Links
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test here caches under its own tmp_path, never in the user's cache dir."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache / "support-ask" / "config-cache.json"


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Files are cacheable at once (not a timestamp tick after their last change), and every
    real validation is counted: the cache's hits are the loads that do not add one."""
    monkeypatch.setattr(config_cache, "_SETTLE_FINE_S", 0.0)
    monkeypatch.setattr(config_cache, "_SETTLE_COARSE_S", 0.0)
    seen: list[str] = []
    real = config_validate.load_config_text

    def counting(text: str, source: str, *, base_dir: Path | None = None) -> Config:
        seen.append(source)
        return real(text, source, base_dir=base_dir)

    monkeypatch.setattr(config_validate, "load_config_text", counting)
    return seen


def test_a_config_with_every_field_comes_back_from_the_cache_the_same(
    tmp_path: Path, validations: list[str], private_cache: Path
) -> None:
    (tmp_path / "mine.md").write_text("Be brief. {{articles}}")
    path = write(tmp_path, EVERYTHING)
    first = load_config(path)
    again = load_config(path)
    assert validations == [str(path)]
    assert again == first and again is not first
    assert again.deployments[0].provider is ProviderKind.AZURE
    assert again.articles.refresh is RefreshRule.ON_INDEX
    assert private_cache.stat().st_mode & 0o777 == 0o600


def test_a_cached_config_loads_without_yaml_in_a_fresh_process(
    tmp_path: Path, validations: list[str]
) -> None:
    path = write(tmp_path, GOOD)
    first = load_config(path)
    probe = (
        "import sys; from pathlib import Path; from gateway.config import load_config\n"
        "config = load_config(Path(sys.argv[1]))\n"
        "print('yaml' in sys.modules); print(repr(config))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False", repr(first)]


def test_a_cached_config_imports_none_of_the_validator(
    tmp_path: Path, validations: list[str]
) -> None:
    path = write(tmp_path, GOOD)
    load_config(path)
    probe = (
        "import sys; from pathlib import Path; from gateway.config import load_config\n"
        "load_config(Path(sys.argv[1]))\n"
        "print(sorted(m for m in sys.modules if m.startswith('gateway.config.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout))
    assert "gateway.config.cache" in loaded  # what served it
    assert not loaded & {
        "gateway.config.validate",
        "gateway.config.walk",
        "gateway.config.sections",
        "gateway.config.deployments",
    }


def test_a_changed_file_is_validated_again(tmp_path: Path, validations: list[str]) -> None:
    path = write(tmp_path, GOOD + "max_output_tokens: 100\n")
    assert load_config(path).max_output_tokens == 100
    path.write_text(GOOD + "max_output_tokens: 2000\n")  # a new size
    assert load_config(path).max_output_tokens == 2000
    before = path.stat().st_mtime_ns
    path.write_text(GOOD + "max_output_tokens: 3000\n")  # the same size, another mtime
    os.utime(path, ns=(before - 1_000_000_007, before - 1_000_000_007))
    assert load_config(path).max_output_tokens == 3000
    assert load_config(path).max_output_tokens == 3000
    assert len(validations) == 3


# Every module of the config package, the vocabulary its records hold, and the secrets'
# shapes the validator refuses a key by.
CODE = [
    *sorted((ROOT / "gateway" / "config").glob("*.py")),
    ROOT / "gateway" / "model.py",
    ROOT / "gateway" / "secrets" / "shapes.py",
]


@pytest.mark.parametrize("code", CODE, ids=[str(p.relative_to(ROOT)) for p in CODE])
def test_a_config_is_validated_again_after_the_code_that_defines_it_changes(
    tmp_path: Path, validations: list[str], monkeypatch: pytest.MonkeyPatch, code: Path
) -> None:
    # A new release or an edited checkout may read the same file differently.
    path = write(tmp_path, GOOD)
    load_config(path)
    real_stat = os.stat
    edited = os.path.realpath(code)

    def stat(target: Any, *args: Any, **kwargs: Any) -> Any:
        info = real_stat(target, *args, **kwargs)
        if isinstance(target, str | os.PathLike) and os.path.realpath(target) == edited:
            # What an edit of the code shows: another size and mtime.
            return SimpleNamespace(
                st_ino=info.st_ino, st_size=info.st_size + 1, st_mtime_ns=info.st_mtime_ns + 1
            )
        return info

    monkeypatch.setattr(os, "stat", stat)
    load_config(path)
    load_config(path)
    assert len(validations) == 2


def test_a_file_changed_within_the_last_tick_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    # A next edit in the same timestamp tick could keep every timestamp and the size.
    monkeypatch.setattr(config_cache, "_SETTLE_FINE_S", 3600.0)
    monkeypatch.setattr(config_cache, "_SETTLE_COARSE_S", 3600.0)
    load_config(write(tmp_path, GOOD))
    assert not private_cache.exists()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "wrong format", "writable by others", "a wrong record"],
)
def test_a_damaged_or_untrusted_cache_is_ignored(
    tmp_path: Path, validations: list[str], private_cache: Path, damage: str
) -> None:
    path = write(tmp_path, GOOD)
    load_config(path)
    text = private_cache.read_text()
    if damage == "garbage":
        private_cache.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        private_cache.write_text(text[: len(text) // 2])
    elif damage == "wrong format":
        private_cache.write_text(text.replace('"format": 1', '"format": 99'))
    elif damage == "writable by others":
        # Anyone could have put another product (or base_url) in it: not trusted.
        private_cache.write_text(text.replace("Acme Cloud", "Evil Corp"))
        private_cache.chmod(0o666)
    else:
        private_cache.write_text(text.replace('"$record": "Policy"', '"$record": "Secret"'))
    assert load_config(path).product == "Acme Cloud"
    assert len(validations) == 2
    # ... and the next run is served from a good cache again.
    assert load_config(path).product == "Acme Cloud"
    assert len(validations) == 2


def test_a_config_that_now_fails_validation_leaves_nothing_of_itself_in_the_cache(
    tmp_path: Path, validations: list[str], private_cache: Path
) -> None:
    path = write(tmp_path, GOOD)
    load_config(path)
    # As an older release, which took credentials in a base_url, would have cached it.
    secret_url = "https://me:Pa55-word-x9@llm.example/v1"
    cached = private_cache.read_text().replace('"base_url": null', f'"base_url": "{secret_url}"')
    private_cache.write_text(cached)
    assert "Pa55-word-x9" in private_cache.read_text()

    path.write_text(GOOD.replace("api_key_env: OPENAI_API_KEY", f"base_url: '{secret_url}'"))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "Pa55-word-x9" not in str(caught.value)
    assert "Pa55-word-x9" not in private_cache.read_text()


def test_an_unwritable_cache_dir_only_costs_speed(
    tmp_path: Path, validations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = write(tmp_path, GOOD)
    assert load_config(path) == load_config(path)
    assert len(validations) == 2


def test_a_config_that_fails_validation_is_never_cached(
    tmp_path: Path, validations: list[str], private_cache: Path
) -> None:
    path = write(tmp_path, GOOD.replace("context_window: 128000", "context_window: -1"))
    for _ in range(2):
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        assert (caught.value.line, caught.value.key) == (7, "deployments[0].context_window")
    assert len(validations) == 2
    assert not private_cache.exists()


def test_a_prompt_deleted_after_caching_is_still_an_error_with_its_line(
    tmp_path: Path, validations: list[str]
) -> None:
    prompt = tmp_path / "mine.md"
    prompt.write_text("Be brief. {{articles}}")
    path = write(tmp_path, "prompt: mine.md\n" + GOOD)
    assert load_config(path).prompt == prompt
    prompt.unlink()
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert (caught.value.line, caught.value.key) == (1, "prompt")


def test_the_cache_keeps_paths_relative_to_the_name_they_were_given_by(
    tmp_path: Path, validations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same file by another name: another `source`, and other folders for its paths.
    (tmp_path / "a").mkdir()
    path = write(tmp_path / "a", GOOD + "state:\n  path: s.json\n")
    monkeypatch.chdir(tmp_path)
    by_relative = load_config(Path("a/support-ask.yaml"))
    by_absolute = load_config(path)
    assert (by_relative.source, by_absolute.source) == ("a/support-ask.yaml", str(path))
    assert by_relative.state_path == by_absolute.state_path == path.parent / "s.json"
    assert len(validations) == 2
    assert load_config(Path("a/support-ask.yaml")) == by_relative
    assert len(validations) == 2


def test_header_values_are_never_copied_to_the_cache(
    tmp_path: Path, validations: list[str], private_cache: Path
) -> None:
    # A gateway's own key may ride in a custom header: it stays in the user's config only.
    text = GOOD.replace(
        "    context_window: 128000\n",
        "    context_window: 128000\n    headers: {X-Portkey-Api-Key: pk-live-0123456789}\n",
        1,
    )
    path = write(tmp_path, text)
    load_config(path)
    load_config(path)
    assert len(validations) == 2
    assert not private_cache.exists()


def test_the_bundled_default_is_cached_too(validations: list[str]) -> None:
    first = load_default_config()
    assert load_default_config() == first
    assert validations == ["<bundled default>"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is the Linux rule")
@pytest.mark.parametrize("xdg", [None, "", "/somewhere/cache"])
def test_the_cache_dir_is_platformdirs_user_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str | None
) -> None:
    import platformdirs

    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME")
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    expected = Path(platformdirs.user_cache_dir("support-ask", appauthor=False))
    assert config_cache._cache_dir() == expected


_USER_DIR_OF = {  # what support-ask asked platformdirs for each dir before user_dir
    "config": lambda pd: pd.user_config_dir("support-ask", appauthor=False),
    "state": lambda pd: pd.user_state_dir("support-ask", appauthor=False),
    "cache": lambda pd: pd.user_cache_dir("support-ask", appauthor=False),
    "log": lambda pd: pd.user_log_dir("support-ask"),
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is the Linux rule")
@pytest.mark.parametrize("kind", sorted(_USER_DIR_OF))
@pytest.mark.parametrize(
    ("xdg", "home"),
    [
        (None, "abs"),
        ("", "abs"),
        ("/somewhere/xdg", "abs"),
        ("/somewhere/xdg/", "abs"),
        ("relative/xdg", "abs"),
        ("  ", "abs"),
        (None, "relative"),
        ("/somewhere/xdg", None),
    ],
)
def test_user_dirs_are_where_platformdirs_puts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, xdg: str | None, home: str | None
) -> None:
    """The dirs worked out without importing platformdirs are the ones it names, for the
    plain cases it is spared and the odd ones it is still asked."""
    import platformdirs

    from gateway.config.find import user_dir

    variable = {"config": "XDG_CONFIG_HOME", "cache": "XDG_CACHE_HOME"}.get(kind, "XDG_STATE_HOME")
    for name, value in (
        (variable, xdg),
        ("HOME", {"abs": str(tmp_path), "relative": "h"}.get(home or "")),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert user_dir(kind) == Path(_USER_DIR_OF[kind](platformdirs))


SEVERAL_KEYS = GOOD.replace(
    "    api_key_env: OPENAI_API_KEY\n",
    "    api_key_env: [OPENAI_KEY_A, OPENAI_KEY_B]\n    key_strategy: round_robin\n",
)


def test_a_deployment_may_name_several_keys_and_how_to_take_them(
    tmp_path: Path, validations: list[str], private_cache: Path
) -> None:
    from gateway.config import KeyStrategy
    from gateway.engine.credentials import variables

    path = write(tmp_path, SEVERAL_KEYS)
    first = load_config(path)
    primary = first.deployments[0]
    assert variables(primary) == ("OPENAI_KEY_A", "OPENAI_KEY_B")
    assert primary.key_strategy is KeyStrategy.ROUND_ROBIN
    again = load_config(path)
    assert again == first and validations == [str(path)], "it caches, enum and all"
    plain = load_config(write(tmp_path, GOOD, name="plain.yaml")).deployments[0]
    assert variables(plain) == ("OPENAI_API_KEY",) and plain.key_strategy is KeyStrategy.IN_ORDER


@pytest.mark.parametrize(
    ("keys", "key", "fragment"),
    [
        ("[]", "deployments[0].api_key_env", "the list is empty"),
        ("[A_KEY, A_KEY]", "deployments[0].api_key_env[1]", "listed twice"),
        ("[A_KEY, 'not a name']", "deployments[0].api_key_env[1]", "not an environment variable"),
        ("[A_KEY, sk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6]", "deployments[0].api_key_env[1]", "API key"),
    ],
)
def test_a_bad_list_of_keys_names_the_entry(
    tmp_path: Path, keys: str, key: str, fragment: str
) -> None:
    text = GOOD.replace("api_key_env: OPENAI_API_KEY", f"api_key_env: {keys}")
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert caught.value.key == key and fragment in str(caught.value)
    assert "Zq8v3KxT1mN4bR7wY2cF9hJ6" not in str(caught.value)


def test_an_unknown_key_strategy_is_an_error(tmp_path: Path) -> None:
    text = SEVERAL_KEYS.replace("round_robin", "random")
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert caught.value.key == "deployments[0].key_strategy"
    assert "in_order, round_robin" in str(caught.value)


@pytest.mark.parametrize(("written", "read"), [("0.25", 0.25), ("0", 0.0), ("1", 1.0)])
def test_min_relevance_is_read_as_a_share(tmp_path: Path, written: str, read: float) -> None:
    path = write(
        tmp_path,
        f"""
        product: X
        deployments: [{{name: a, provider: local, context_window: 10}}]
        articles:
          min_relevance: {written}
        """,
    )
    assert load_config(path).articles.min_relevance == read
    # and again through the cache of validated configs
    assert load_config(path).articles.min_relevance == read


def test_min_relevance_has_its_measured_default_when_unset(tmp_path: Path) -> None:
    from gateway.knowledge.relevance import DEFAULT_MIN_RELEVANCE

    assert load_config(write(tmp_path, GOOD)).articles.min_relevance == DEFAULT_MIN_RELEVANCE
