"""The run's one redactor: exact values out of any text, a key split across stream deltas
held back until it is whole, and stdout/stderr scrubbed where text leaves the process."""

from __future__ import annotations

import sys

import pytest

from cli.terminal.scrubbed import protect
from gateway.config import Config, Deployment
from gateway.model import ErrorKind, ProviderError, ProviderKind, Reply, Request
from gateway.providers.redaction import RedactingProvider
from gateway.secrets.redactor import Redactor, StreamScrubber, redactor_for
from gateway.secrets.shapes import PLACEHOLDER
from tests.support.fakes import failure

KEY = "corp-Gw-7f3a9c1e55d0b2aa9e41"
OTHER = "team-Relay-0b2aa9e41c7f3a9c"
TEXT = f"Your proxy saw {KEY} and {OTHER}; open Settings, then Reset password."
REQUEST = Request("system", "q", 100)


def test_every_known_value_is_replaced_the_longest_first() -> None:
    redactor = Redactor([KEY, KEY[:12], OTHER, "short"])
    assert redactor.scrub(TEXT) == (
        f"Your proxy saw {PLACEHOLDER} and {PLACEHOLDER}; open Settings, then Reset password."
    )
    assert redactor.scrub("a short word stays") == "a short word stays"  # too short to be a key
    assert "7f3a" not in repr(redactor)


@pytest.mark.parametrize("cut", range(1, len(TEXT)))
def test_a_key_cut_anywhere_across_two_deltas_never_reaches_the_sink(cut: int) -> None:
    redactor = Redactor([KEY, OTHER])
    out: list[str] = []
    stream = StreamScrubber(redactor, out.append)
    stream(TEXT[:cut])
    stream(TEXT[cut:])
    stream.flush()
    # Had any piece of a key gone out before the key was whole, it would be here unscrubbed.
    assert "".join(out) == redactor.scrub(TEXT)


def test_one_character_at_a_time_still_hides_the_key() -> None:
    redactor = Redactor([KEY])
    out: list[str] = []
    stream = StreamScrubber(redactor, out.append)
    for ch in TEXT:
        stream(ch)
    stream.flush()
    assert "".join(out) == redactor.scrub(TEXT)


def test_a_normal_answers_deltas_go_out_at_once_but_for_what_could_begin_a_key() -> None:
    # What keeps streaming's first token prompt: only a tail that could be the start of a
    # key waits for the next delta, a character or two in a normal answer.
    redactor = Redactor([KEY, OTHER, "sk-proj-0123456789abcdefghij"])
    out: list[str] = []
    stream = StreamScrubber(redactor, out.append)
    steps = [
        ("Open ", "Open "),
        ("Settings", "Setting"),  # "s" could begin "sk-proj-..."
        (", then ", "s, then "),
        ("Reset password", "Reset password"),
        (". Ask for a c", ". Ask for a "),  # "c" could begin "corp-..."
        ("or", ""),  # "cor" still could
        ("rection.", "correction."),  # and now cannot
    ]
    for delta, sent in steps:
        before = len(out)
        stream(delta)
        assert "".join(out[before:]) == sent
    stream.flush()
    assert "".join(out) == "".join(delta for delta, _ in steps)


class Echo:
    """A provider that streams `TEXT` in three deltas or fails after streaming some."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.closed = False

    def complete(self, request: Request, *, timeout: float, on_text=None, **_: object) -> Reply:  # type: ignore[no-untyped-def]
        if on_text is not None:
            for piece in (TEXT[:20], TEXT[20:30], TEXT[30:]):
                on_text(piece)
        if self.fail:
            broken = failure(ErrorKind.NETWORK, detail=f"connection reset after {KEY}")
            raise ProviderError(broken, partial=TEXT)
        return Reply(TEXT, "stop", model=f"echo-{OTHER}")

    def close(self) -> None:
        self.closed = True


def test_the_provider_wrapper_scrubs_the_reply_the_stream_and_the_error() -> None:
    redactor = Redactor([KEY, OTHER])
    inner = Echo()
    provider = RedactingProvider(inner, redactor)
    reply = provider.complete(REQUEST, timeout=1)
    assert reply.text == redactor.scrub(TEXT) and reply.model == f"echo-{PLACEHOLDER}"

    seen: list[str] = []
    streamed = provider.complete(REQUEST, timeout=1, on_text=seen.append)
    assert "".join(seen) == streamed.text == redactor.scrub(TEXT)

    seen.clear()
    with pytest.raises(ProviderError) as caught:
        RedactingProvider(Echo(fail=True), redactor).complete(
            REQUEST, timeout=1, on_text=seen.append
        )
    assert "".join(seen) == caught.value.partial == redactor.scrub(TEXT)  # held tail flushed
    assert KEY not in caught.value.failure.detail and PLACEHOLDER in caught.value.failure.detail
    provider.close()
    assert inner.closed


def test_the_runs_redactor_knows_keys_header_secrets_and_proxy_passwords() -> None:
    config = Config(
        "Acme",
        (
            Deployment(
                "a",
                ProviderKind.OPENAI,
                1000,
                model="m",
                api_key_env="OPENAI_API_KEY",
                base_url="https://llm.corp.example/v1",
                headers=(("X-Gateway-Token", OTHER), ("X-Team", "support-team-one")),
            ),
        ),
    )
    environ = {
        "OPENAI_API_KEY": f"  {KEY}\n",
        "HTTPS_PROXY": "http://me:pr%40xy-pass-2024@proxy.corp:3128",
    }
    redactor = redactor_for(config, environ)
    text = f"{KEY} {OTHER} pr%40xy-pass-2024 pr@xy-pass-2024 support-team-one"
    assert redactor.scrub(text) == f"{' '.join([PLACEHOLDER] * 4)} support-team-one"


def test_every_one_of_a_deployments_several_keys_is_redacted() -> None:
    from gateway.config import load_config_text

    config = load_config_text(
        """\
product: Acme
deployments:
  - name: a
    provider: openai
    model: m
    api_key_env: [OPENAI_KEY_A, OPENAI_KEY_B]
    context_window: 1000
""",
        "c.yaml",
    )
    environ = {"OPENAI_KEY_A": KEY, "OPENAI_KEY_B": OTHER}
    assert redactor_for(config, environ).scrub(f"{KEY} and {OTHER}") == (
        f"{PLACEHOLDER} and {PLACEHOLDER}"
    )


def test_stdout_and_stderr_are_scrubbed_for_the_rest_of_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # put back after the test
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    protect(Redactor([KEY]))
    protect(Redactor([OTHER]))  # a second run in the same process: its own redactor
    print(f"answer {OTHER}")
    sys.stderr.write(f"error: {OTHER} ({KEY} is no longer this run's)\n")
    assert sys.stdout.isatty() is False  # the wrapped stream's own answers
    out, err = capsys.readouterr()
    assert out == f"answer {PLACEHOLDER}\n"
    assert err == f"error: {PLACEHOLDER} ({KEY} is no longer this run's)\n"


def test_no_secret_means_no_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # stderr is scrubbed by shape all the same
    before = sys.stdout
    protect(Redactor([]))
    assert sys.stdout is before


CONFIG = """\
product: Acme Cloud
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    base_url: http://127.0.0.1:9/v1
    context_window: 128000
"""


@pytest.mark.parametrize("args", [["--json"], ["--debug"]])
def test_an_error_quoting_a_key_after_the_command_body_ends_is_scrubbed_too(
    tmp_path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    # A bug whose message quotes the key: printed by the command guard (and as the --json
    # failure) after the ask body has ended, through the same scrubbed streams.
    from cli.runtime import wiring
    from tests.support.cli_runner import run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "support-ask.yaml").write_text(CONFIG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp_path / "state.json"))

    def broken(*a: object, **kw: object) -> None:
        raise RuntimeError(f"a bug that quotes {KEY}")

    monkeypatch.setattr(wiring, "open_help_centre", broken)
    out = run(["How do I reset?", *args])
    assert out.exit_code == 1
    assert f"a bug that quotes {PLACEHOLDER}" in out.stderr
    assert KEY not in out.stdout + out.stderr
