"""What a secret looks like is decided once: a shape added to `gateway.secrets.shapes` is
caught by every channel that writes text out, and everything redacted reads the same."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator

import pytest

from cli.runtime.logsetup import RedactingFilter
from cli.terminal.scrubbed import protect
from gateway.classify.errors import classify_exception, classify_response
from gateway.config import ConfigError, load_config_text
from gateway.model import ErrorKind, ProviderError, Reply, Request
from gateway.providers.redaction import RedactingProvider
from gateway.secrets import shapes
from gateway.secrets.redactor import Redactor
from gateway.secrets.shapes import PLACEHOLDER, redact_headers, redact_text, redact_url
from tests.support.fakes import failure

# A key of a provider this project has never heard of: nothing about it but its prefix
# says "key" (not hex, too short and underscored for the long-token rule).
NEW_PREFIX = "nk9_"
NEW_KEY = NEW_PREFIX + "Zq8v3KxT1mN4bR7wY2cF9hJ6"
KNOWN_KEY = "sk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6"

CONFIG = """\
product: Acme
deployments:
  - name: a
    provider: openai
    model: m
    api_key_env: {value}
    context_window: 1000
"""


def said(key: str) -> str:
    """A provider's message echoing a key back."""
    return f"Incorrect API key provided: {key}. Check your dashboard."


def _classifier(key: str, _: pytest.MonkeyPatch) -> str:
    body = {"error": {"message": said(key), "type": "invalid_request_error", "code": None}}
    return classify_response(401, {}, body, now=0).detail


def _transport_error(key: str, _: pytest.MonkeyPatch) -> str:
    return classify_exception(OSError(said(key))).detail


def _provider_error(key: str, _: pytest.MonkeyPatch) -> str:
    class Failing:
        def complete(self, request: Request, *, timeout: float, **_: object) -> Reply:
            raise ProviderError(failure(ErrorKind.AUTH, detail=said(key)))

    with pytest.raises(ProviderError) as caught:
        RedactingProvider(Failing(), Redactor([])).complete(Request("s", "q", 10), timeout=1)
    return caught.value.failure.detail


def _log(key: str, _: pytest.MonkeyPatch) -> str:
    return RedactingFilter().scrub(said(key))


def _stderr(key: str, monkeypatch: pytest.MonkeyPatch) -> str:
    written = io.StringIO()
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(sys, "stderr", written)
    protect(Redactor([]))  # a run that knows no key: stderr is still judged by shape
    sys.stderr.write(said(key) + "\n")
    return written.getvalue()


def _config(key: str, _: pytest.MonkeyPatch) -> str:
    """What the validator lets out: its error, or the variable name `config check` prints."""
    try:
        config = load_config_text(CONFIG.format(value=key), "c.yaml")
    except ConfigError as err:
        return str(err)
    return str(config.deployments[0].api_key_env)


Channel = Callable[[str, pytest.MonkeyPatch], str]
CHANNELS: dict[str, Channel] = {
    "error detail": _classifier,
    "transport error": _transport_error,
    "provider error": _provider_error,
    "-v log": _log,
    "stderr": _stderr,
    "config validation": _config,
}
REPLACING = {name: c for name, c in CHANNELS.items() if name != "config validation"}


@pytest.fixture
def new_prefix(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(shapes, "KEY_PREFIXES", (*shapes.KEY_PREFIXES, NEW_PREFIX))
    shapes._text_patterns.cache_clear()
    yield
    monkeypatch.undo()
    shapes._text_patterns.cache_clear()


@pytest.mark.parametrize("channel", CHANNELS.values(), ids=CHANNELS.keys())
def test_an_unknown_prefix_passes_every_channel(
    channel: Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What makes the next test able to fail: without the prefix, nothing hides this key.
    assert NEW_KEY in channel(NEW_KEY, monkeypatch)


@pytest.mark.parametrize("channel", CHANNELS.values(), ids=CHANNELS.keys())
def test_a_prefix_added_to_the_shapes_is_caught_by_every_channel(
    channel: Channel, monkeypatch: pytest.MonkeyPatch, new_prefix: None
) -> None:
    out = channel(NEW_KEY, monkeypatch)
    assert NEW_KEY not in out
    assert NEW_KEY[4:12] not in out  # not even a fragment


@pytest.mark.parametrize("channel", REPLACING.values(), ids=REPLACING.keys())
def test_every_channel_writes_the_one_placeholder(
    channel: Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert f"provided: {PLACEHOLDER}." in channel(KNOWN_KEY, monkeypatch)


def test_a_config_key_that_is_a_key_is_the_placeholder_in_its_key_path() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text(
            "product: Acme\nsk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6: x\ndeployments: []\n", "c.yaml"
        )
    assert "Zq8v3KxT" not in str(caught.value)
    assert caught.value.key == PLACEHOLDER
    assert str(caught.value).startswith(f"c.yaml:2: {PLACEHOLDER}: unknown key (not shown")


# -- free text ------------------------------------------------------------------------------

SHAPED = [
    "GET https://x/v1beta/models/m:generateContent?key=AIzaSyREALKEY&alt=sse",
    "Authorization: Bearer abc.def-ghi",
    "x-api-key: sk-ant-zzz",
    "[(b'Host', b'api.openai.com'), (b'x-api-key', b'zzzzsecret')]",
    "{'authorization': 'Basic dXNlcjpwYXNz', 'cookie': 'a=b'}",
    "Illegal header value b'Bearer abcDEF0123456789xyz'",
    "Incorrect API key provided: sk-VKMIs*****************************wjh3.",
    "the key 0123456789abcdef0123456789abcdef was refused",
    "https://h/p?signature=abc&api-version=2024-10-21",
]


@pytest.mark.parametrize("text", SHAPED)
def test_each_shape_is_replaced_and_what_names_it_kept(text: str) -> None:
    cleaned = redact_text(text)
    assert cleaned != text and PLACEHOLDER in cleaned
    assert redact_text(cleaned) == cleaned  # scrubbing twice changes nothing more


@pytest.mark.parametrize("text", SHAPED)
def test_the_quick_test_never_passes_over_a_shape(text: str) -> None:
    # `redact_text` skips text its plain-string test rules out: that test must hold for
    # every text a pattern changes, or a shape would go through unscrubbed.
    assert shapes._may_hold_one(text)
    for pattern in shapes._text_patterns():
        for match in pattern.finditer(text):
            assert shapes._may_hold_one(match.group(0))


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "Rate limit reached for gpt-4o in organization org-x; ask-me-later task-runner"
    assert redact_text(text) == text
    prose = (
        "Invalid authorization, please retry; the bearer of request id "
        "req_4f3b0d9c5e2a4f6c8e1b7a9d0c2e4f6a"
    )
    assert redact_text(prose) == prose


def test_redact_bearer_and_url_key() -> None:
    text = (
        "Illegal header value b'Bearer abcDEF0123456789xyz' for "
        "https://generativelanguage.googleapis.com/v1beta/models?key=AbC123dEf456&alt=sse"
    )
    cleaned = redact_text(text)
    assert "abcDEF0123456789xyz" not in cleaned
    assert "AbC123dEf456" not in cleaned
    assert "alt=sse" in cleaned


def test_redaction_helpers() -> None:
    assert redact_url("https://x/v1beta/models/m:generateContent?alt=sse&key=AIzaSECRET") == (
        f"https://x/v1beta/models/m:generateContent?alt=sse&key={PLACEHOLDER}"
    )
    assert redact_headers(
        {
            "Authorization": "Bearer sk-1",
            "api-key": "k",
            "x-api-key": "k",
            "x-goog-api-key": "k",
            "X-Proxy-Token": "t",
            "anthropic-version": "2023-06-01",
        }
    ) == {
        "authorization": PLACEHOLDER,
        "api-key": PLACEHOLDER,
        "x-api-key": PLACEHOLDER,
        "x-goog-api-key": PLACEHOLDER,
        "x-proxy-token": PLACEHOLDER,
        "anthropic-version": "2023-06-01",
    }


def test_a_url_password_as_written_and_as_sent() -> None:
    assert shapes.url_passwords("http://me:pr%40xy@proxy:3128") == ("pr%40xy", "pr@xy")
    assert shapes.url_passwords("http://me:@proxy:3128") == ()
    assert shapes.url_passwords("http://proxy:3128") == ()
    assert shapes.url_passwords("http://[::1") == ()
