"""One rule for every web address kept: a base_url, articles.url_base and the address an
article states for itself differ only in whether something is appended to them."""

from __future__ import annotations

import pytest

from gateway.config.urls import url_problem
from gateway.knowledge.load import parse


def page(url: str) -> str | None:
    return url_problem(url, name="the page", appended=None, example="x", userinfo="fix")


def base(url: str) -> str | None:
    return url_problem(url, name="a base", appended="a path", example="x", userinfo="fix")


@pytest.mark.parametrize(
    "url",
    ["help.acme.com/kb", "ftp://help.acme.com", "https://", "https://a b.com", "https://[::1",
     "https://bob:pw@help.acme.com", "https://help.acme.com:99999"],
)  # fmt: skip
def test_what_no_address_may_be(url: str) -> None:
    assert page(url) is not None and base(url) is not None


def test_only_an_address_something_is_appended_to_refuses_a_query_or_fragment() -> None:
    for url in ("https://help.acme.com/kb?lang=en", "https://help.acme.com/kb#top"):
        assert page(url) is None
        problem = base(url)
        assert problem is not None and "remove" in problem
    assert page("https://help.acme.com/kb") is None and base("https://help.acme.com/kb") is None


def test_an_article_keeps_only_the_address_the_rule_allows() -> None:
    kept, _ = parse("a.md", b"---\nurl: https://help.acme.com/a?lang=en\n---\n# A\n\ntext\n")
    refused, _ = parse("a.md", b"---\nurl: https://bob:pw@help.acme.com/a\n---\n# A\n\ntext\n")
    assert kept is not None and kept.url == "https://help.acme.com/a?lang=en"
    assert refused is not None and refused.url is None
