from __future__ import annotations

import pytest

from gateway.answers.urls import public_url

BASE = "https://help.acme.example/kb/"


@pytest.mark.parametrize(
    ("path", "roots", "url"),
    [
        ("kb/billing/refunds.md", ["kb"], "https://help.acme.example/kb/billing/refunds"),
        ("kb/billing/refunds.md", ["kb/"], "https://help.acme.example/kb/billing/refunds"),
        ("kb/Getting started.txt", ["kb"], "https://help.acme.example/kb/Getting%20started"),
        ("site/faq/index.html", ["site"], "https://help.acme.example/kb/faq/index.html"),
        ("kb/one.md", ["kb/one.md"], "https://help.acme.example/kb/one"),
        ("docs/api/keys.md", ["docs", "docs/api"], "https://help.acme.example/kb/keys"),
        ("elsewhere/a.md", ["kb"], None),
    ],
)
def test_url_base_joins_the_path_under_its_folder(
    path: str, roots: list[str], url: str | None
) -> None:
    assert public_url(path, None, roots=roots, url_base=BASE) == url


def test_an_articles_own_url_wins_and_nothing_is_made_up_without_one() -> None:
    own = "https://acme.example/help/refunds"
    assert public_url("kb/refunds.md", own, roots=["kb"], url_base=BASE) == own
    assert public_url("kb/refunds.md", own, roots=["kb"], url_base=None) == own
    assert public_url("kb/refunds.md", None, roots=["kb"], url_base=None) is None
