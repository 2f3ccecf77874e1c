"""`privacy:` as teams write it: the built-in kinds on by default, `mask: false`, their own
patterns; every mistake named with its file:line and key, all in one pass."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, load_default_config
from gateway.config.model import MaskPattern, PrivacySettings
from gateway.config.validate import load_config_text

BASE = """\
product: Acme
deployments:
  - {name: local, provider: local, context_window: 100000}
"""


def load(privacy: str) -> PrivacySettings:
    return load_config_text(BASE + privacy, "team.yaml").privacy


def test_masking_is_on_by_default_and_in_the_bundled_config() -> None:
    assert load("") == PrivacySettings(mask=True, patterns=())
    assert load_default_config().privacy == PrivacySettings()


def test_a_team_turns_the_built_in_kinds_off_and_adds_its_own() -> None:
    settings = load(
        "privacy:\n"
        "  mask: false\n"
        "  patterns:\n"
        "    - name: customer id\n"
        "      regex: 'CUS-\\d{6}'\n"
        "    - {name: ORDER_REF, regex: 'ORD-[A-Z0-9]{8}'}\n"
    )
    assert settings == PrivacySettings(
        mask=False,
        patterns=(
            MaskPattern("customer id", r"CUS-\d{6}"),
            MaskPattern("ORDER_REF", "ORD-[A-Z0-9]{8}"),
        ),
    )


def test_every_bad_pattern_is_named_with_its_line_in_one_pass() -> None:
    with pytest.raises(ConfigError) as caught:
        load(
            "privacy:\n"  # line 4
            "  mask: yes please\n"
            "  patterns:\n"
            "    - {name: email, regex: 'x'}\n"  # line 7
            "    - {name: broken, regex: '(CUS'}\n"
            "    - {name: anything, regex: 'x*'}\n"
            "    - {name: ref}\n"
            "    - {name: 'Ref', regex: 'R\\d+'}\n"
            "    - {name: '1st', regex: 'R\\d+'}\n"
            "    - {name: 'REF', regex: 'Q\\d+'}\n"
        )
    lines = str(caught.value).splitlines()
    assert lines == [
        "team.yaml:5: privacy.mask: expected true or false, got text 'yes please'",
        "team.yaml:7: privacy.patterns[0].name: EMAIL is a built-in kind, masked already; "
        "name your pattern otherwise",
        "team.yaml:8: privacy.patterns[1].regex: not a regular expression: missing ), "
        "unterminated subpattern at position 0",
        "team.yaml:9: privacy.patterns[2].regex: matches the empty text, so it would mask "
        "nothing useful; make it match at least one character",
        "team.yaml:10: privacy.patterns[3].regex: missing; this key is required",
        "team.yaml:12: privacy.patterns[5].name: '1st' cannot name a placeholder: letters, "
        "digits, '_', '-' and spaces, starting with a letter (e.g. customer_id -> "
        "[CUSTOMER_ID_1])",
        "team.yaml:13: privacy.patterns[6].name: the placeholder REF is privacy.patterns[4]'s too",
    ]


def test_an_unknown_key_in_privacy_suggests_the_right_one() -> None:
    wanted = r"team.yaml:5: privacy.pattern: .*did you mean 'patterns'"
    with pytest.raises(ConfigError, match=wanted):
        load("privacy:\n  pattern: []\n")
