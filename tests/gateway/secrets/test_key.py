"""Keys as read from the environment: which values can be sent, and what a refusal says."""

from __future__ import annotations

import pytest

from gateway.config import Config, Deployment
from gateway.config.keys import key_errors
from gateway.model import ProviderKind
from gateway.secrets.key import KeyValueError, key_problem, read_key

KEY = "sk-proj-Zq8v3KxT1mN4bR7wY2cF9hJ6"

UNUSABLE = {
    "a second line": (f"{KEY}\nexport OTHER=1", "spans more than one line"),
    "a CRLF from a Windows file": (f"{KEY[:10]}\r\n{KEY[10:]}", "spans more than one line"),
    "a lone CR": (f"{KEY[:10]}\r{KEY[10:]}", "spans more than one line"),
    "a bracketed-paste escape": (f"\x1b[200~{KEY}\x1b[201~", "holds a control character"),
    "a tab": (f"{KEY[:10]}\t{KEY[10:]}", "holds a control character"),
    "a NUL": (f"{KEY}\x00", "holds a control character"),
    "DEL": (f"{KEY}\x7f", "holds a control character"),
    "typographic quotes": (f"\u201c{KEY}\u201d", "holds a non-ASCII character"),
    "a no-break space": (f"{KEY[:10]}\u00a0{KEY[10:]}", "holds a non-ASCII character"),
    "a zero-width space": (f"{KEY}\u200b", "holds a non-ASCII character"),
    "two keys with a space": (f"{KEY} {KEY}", "holds a space"),
    "a header value pasted whole": (
        f"Bearer {KEY}",
        "starts with 'Bearer ' (a header's value): give the key alone",
    ),
}


@pytest.mark.parametrize(("value", "problem"), UNUSABLE.values(), ids=UNUSABLE.keys())
def test_a_value_that_cannot_be_a_header_is_refused_without_quoting_it(
    value: str, problem: str
) -> None:
    assert key_problem(value.strip()) == problem
    with pytest.raises(KeyValueError) as caught:
        read_key({"OPENAI_API_KEY": value}, "OPENAI_API_KEY")
    message = str(caught.value)
    assert message == f"the environment variable OPENAI_API_KEY {problem}"
    assert not any(KEY[i : i + 4] in message for i in range(len(KEY) - 3))


@pytest.mark.parametrize(
    "value", [KEY, f"  {KEY}\n", "0123456789abcdef0123456789abcdef", "AIza-x_y.z~+/="]
)
def test_real_keys_and_surrounding_whitespace_are_fine(value: str) -> None:
    key = read_key({"K": value}, "K")
    assert key is not None and key.reveal() == value.strip()


@pytest.mark.parametrize("environ", [{}, {"K": ""}, {"K": " \n "}])
def test_an_unset_or_blank_variable_is_no_key(environ: dict[str, str]) -> None:
    assert read_key(environ, "K") is None


def test_the_config_level_check_names_the_file_the_key_path_and_each_variable_once() -> None:
    def dep(name: str, var: str) -> Deployment:
        return Deployment(name, ProviderKind.OPENAI, 1000, model="m", api_key_env=var)

    config = Config(
        "Acme",
        (dep("a", "GOOD_KEY"), dep("b", "BAD_KEY"), dep("c", "BAD_KEY")),
        long_context=dep("long", "OTHER_BAD"),
        source="/etc/support-ask.yaml",
    )
    environ = {"GOOD_KEY": KEY, "BAD_KEY": f"{KEY}\n{KEY}", "OTHER_BAD": f"\u201c{KEY}"}
    errors = key_errors(config, environ)
    assert [(e.file, e.key) for e in errors] == [
        ("/etc/support-ask.yaml", "deployments[1].api_key_env"),
        ("/etc/support-ask.yaml", "long_context.api_key_env"),
    ]
    assert "BAD_KEY spans more than one line" in str(errors[0])
    assert "OTHER_BAD holds a non-ASCII character" in str(errors[1])
    assert all(KEY[:6] not in str(e) for e in errors)
