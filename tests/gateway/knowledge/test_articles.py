from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.knowledge.load import ArticlesError, load_articles
from gateway.model import Article
from tests.support.paths import EXAMPLES_KB


def write(root: Path, relative: str, content: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def by_title(articles: tuple[Article, ...]) -> dict[str, Article]:
    return {a.title: a for a in articles}


def test_folder_is_read_recursively_in_relative_path_order(tmp_path: Path) -> None:
    # Written out of order, so a filesystem's listing order cannot pass for sorting.
    for relative in ["zeta.md", "billing/refunds.txt", "account/password.md", "alpha.html"]:
        write(tmp_path, relative, f"# {relative}\n\nSome text.\n")
    articles, warnings = load_articles([tmp_path])
    assert warnings == []
    relatives = [Path(a.path).relative_to(tmp_path).as_posix() for a in articles]
    assert relatives == ["account/password.md", "alpha.html", "billing/refunds.txt", "zeta.md"]
    assert load_articles([tmp_path])[0] == articles


@pytest.mark.parametrize("trailing", ["", "/"])
def test_a_page_beside_a_folder_of_its_name_keeps_the_relative_path_order(
    tmp_path: Path, trailing: str
) -> None:
    # "." (0x2e) sorts before "/" (0x2f) and "-" (0x2d) before both: a walk that went into
    # the folder "guide" when it met it would put guide/b.md before guide.md.
    names = ["guide/b.md", "guide.md", "guide-x.md", "guide/a/c.md", "guide 2.md"]
    for relative in names:
        write(tmp_path, relative, f"# {relative}\n\nSome text.\n")
    articles, _ = load_articles([Path(f"{tmp_path}{trailing}")])
    relatives = [Path(a.path).relative_to(tmp_path).as_posix() for a in articles]
    assert relatives == ["guide 2.md", "guide-x.md", "guide.md", "guide/a/c.md", "guide/b.md"]


def test_every_article_suffix_is_read_and_other_files_are_ignored(tmp_path: Path) -> None:
    for name in ["a.md", "b.markdown", "c.txt", "d.html", "e.htm", "F.MD"]:
        write(tmp_path, name, "Body text.")
    write(tmp_path, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(tmp_path, "data.json", "{}")
    write(tmp_path, ".hidden.md", "secret draft")
    write(tmp_path, ".git/notes.md", "internal")
    articles, warnings = load_articles([tmp_path])
    names = sorted(Path(a.path).name for a in articles)
    assert names == ["F.MD", "a.md", "b.markdown", "c.txt", "d.html", "e.htm"]
    assert warnings == []


def test_files_named_directly_are_read_in_the_order_given(tmp_path: Path) -> None:
    second = write(tmp_path, "notes.rst", "Restructured text is still text.")
    first = write(tmp_path, "z.md", "# Zed\n\nText.")
    articles, _ = load_articles([first, second])
    assert [a.path for a in articles] == [str(first), str(second)]
    assert articles[1].text == "Restructured text is still text."


def test_a_file_reached_twice_is_read_once(tmp_path: Path) -> None:
    path = write(tmp_path, "kb/a.md", "# A\n\nText.")
    articles, _ = load_articles([tmp_path / "kb", path])
    assert len(articles) == 1


def test_a_symlink_to_an_article_already_read_is_not_read_again(tmp_path: Path) -> None:
    write(tmp_path, "kb/a.md", "# A\n\nText.")
    (tmp_path / "kb" / "z-link.md").symlink_to("a.md")
    articles, warnings = load_articles([tmp_path / "kb"])
    assert [a.path for a in articles] == [str(tmp_path / "kb" / "a.md")]
    assert warnings == []


def test_broken_and_looping_symlinks_are_skipped_with_a_warning(tmp_path: Path) -> None:
    write(tmp_path, "kb/a.md", "# A\n\nText.")
    (tmp_path / "kb" / "gone.md").symlink_to("nowhere.md")
    (tmp_path / "kb" / "loop.md").symlink_to("loop.md")
    articles, warnings = load_articles([tmp_path / "kb"])
    assert [a.title for a in articles] == ["A"]
    assert sorted(warnings) == [
        f"skipped {tmp_path / 'kb' / name}: not a regular file" for name in ("gone.md", "loop.md")
    ]


def test_a_markdown_help_centre_never_loads_the_html_parser(tmp_path: Path) -> None:
    # The CLI reads the articles on every question: HTML support costs only those who use it.
    write(tmp_path, "kb/a.md", "# A\n\nText.")
    write(tmp_path, "web/b.html", "<h1>B</h1><p>Text.</p>")
    probe = (
        "import sys; from pathlib import Path; from gateway.knowledge.load import load_articles\n"
        "load_articles([Path(sys.argv[1])]); print('html.parser' in sys.modules)\n"
        "load_articles([Path(sys.argv[2])]); print('html.parser' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "kb"), str(tmp_path / "web")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    ("name", "content", "title"),
    [
        ("x.md", "Intro line.\n\n## Resetting your password\n\nText.", "Resetting your password"),
        ("x.md", "# **Billing** & `invoices` #\n\nText.", "Billing & invoices"),
        ("x.md", "Changing plans\n==============\n\nText.", "Changing plans"),
        (
            "x.md",
            "---\ntitle: 'From front matter'\ntags: [a]\n---\n# Heading\n\nT.",
            "From front matter",
        ),
        ("exporting-your_data.txt", "Just text, no heading.", "Exporting your data"),
        ("kb-0042.txt", "Refund policy\n\nRefunds take 5 days.", "Refund policy"),
        ("kb-0043.txt", "Refunds take 5 days.\n\nAsk billing.", "Kb 0043"),
        ("api.txt", "# API keys\n\nText.", "API keys"),
        # The first heading wins, whichever its kind; blanks and markup around it go.
        ("x.md", "Intro.\nPlans *now* \t\n-----\n\n# Later\n\nText.", "Plans now"),
        ("x.md", "# First\n\nSecond\n======\n\nText.", "First"),
        ("x.md", "# Only atx\nUnderlined?\n===\n", "Only atx"),
        ("x.md", "Some text.\n\n" * 60 + "Deep heading\n---\n\nText.", "Deep heading"),
    ],
)
def test_titles(tmp_path: Path, name: str, content: str, title: str) -> None:
    articles, _ = load_articles([write(tmp_path, name, content)])
    assert articles[0].title == title


def test_front_matter_is_not_article_text(tmp_path: Path) -> None:
    path = write(tmp_path, "x.md", "---\ntitle: T\nauthor: bot\n---\nBody here.\n")
    articles, _ = load_articles([path])
    assert articles[0].text == "Body here."


HTML = """<!DOCTYPE html>
<html><head><title>Service status | Acme Help</title>
<style>body { color: red }</style>
<script>var secret = "do not show";</script></head>
<body>
<nav>Home</nav>
<h1>Service status &amp; outages</h1>
<p>Check   the
status page&nbsp;first. It&#39;s updated &eacute;very minute.</p>
<h2>During an outage</h2>
<ol><li>Wait five minutes.</li><li><p>Retry the request.</p></li></ol>
<ul><li>Email us</li></ul>
<pre>curl https://status.example
  --silent</pre>
<noscript>Enable JavaScript</noscript>
<table><tr><td>Region</td><td>EU</td></tr></table>
</body></html>
"""


def test_html_is_reduced_to_text(tmp_path: Path) -> None:
    articles, _ = load_articles([write(tmp_path, "status.html", HTML)])
    article = articles[0]
    assert article.title == "Service status & outages"
    text = article.text
    for dropped in ("color: red", "do not show", "Enable JavaScript", "Acme Help", "<"):
        assert dropped not in text
    assert "Check the status page first. It's updated \xe9very minute." in text
    assert "Home\n\n# Service status & outages\n\nCheck" in text
    assert (
        "## During an outage\n\n1. Wait five minutes.\n2. Retry the request.\n\n- Email us" in text
    )
    assert "curl https://status.example\n  --silent" in text
    assert "Region EU" in text


def test_html_inline_markup_and_odd_scripts(tmp_path: Path) -> None:
    html = (
        "<h1>Billing <em>and</em> <strong>invoices</strong></h1>"
        '<p>See <a href="/x" title="a > b">the <b>guide</b></a>, <span class=k>now</span>.</p>'
        "<script>if (a<b) { x = '</p>'; }</script>"
        "<p>Kept after the script.</p>"
    )
    articles, _ = load_articles([write(tmp_path, "x.html", html)])
    assert articles[0].title == "Billing and invoices"
    assert "See the guide, now." in articles[0].text
    assert articles[0].text.endswith("Kept after the script.")
    assert "<" not in articles[0].text


def test_html_title_falls_back_to_the_title_element(tmp_path: Path) -> None:
    path = write(tmp_path, "x.htm", "<title>Refund policy</title><p>Refunds take 5 days.</p>")
    articles, _ = load_articles([path])
    assert articles[0].title == "Refund policy"
    assert articles[0].text == "Refunds take 5 days."


def test_encodings_and_line_endings(tmp_path: Path) -> None:
    bom = write(tmp_path, "bom.md", "\ufeff# With BOM\r\n\r\nWindows text.\r\n".encode())
    utf16 = write(tmp_path, "utf16.txt", "# Wide\n\nCafé.".encode("utf-16"))
    articles, warnings = load_articles([bom, utf16])
    assert warnings == []
    assert articles[0].title == "With BOM"
    assert articles[0].text == "# With BOM\n\nWindows text."
    assert articles[1].title == "Wide"
    assert "Café." in articles[1].text


def test_unusable_files_are_skipped_with_a_warning_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "good.md", "# Good\n\nText.")
    write(tmp_path, "binary.md", b"PK\x03\x04\x00\x00zip inside")
    write(tmp_path, "latin1.md", "caf\xe9".encode("latin-1"))
    write(tmp_path, "empty.md", "")
    write(tmp_path, "blank.html", "<html><script>x()</script>\n  </html>")
    locked = write(tmp_path, "locked.md", "# Locked\n\nText.")
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    articles, warnings = load_articles([tmp_path])
    assert [a.title for a in articles] == ["Good"]
    assert len(warnings) == 5
    reasons = {Path(w.split(": ")[0].removeprefix("skipped ")).name: w for w in warnings}
    assert "binary" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "empty" in reasons["empty.md"]
    assert "empty" in reasons["blank.html"]
    assert "Permission denied" in reasons["locked.md"]


def test_missing_path_is_a_warning_when_others_have_articles(tmp_path: Path) -> None:
    good = write(tmp_path, "good.md", "Text.")
    missing = tmp_path / "nope"
    articles, warnings = load_articles([missing, good])
    assert len(articles) == 1
    assert warnings == [f"{missing}: no such file or folder"]


def test_no_readable_article_is_an_error_carrying_the_reasons(tmp_path: Path) -> None:
    write(tmp_path, "kb/empty.md", "")
    with pytest.raises(ArticlesError) as caught:
        load_articles([tmp_path / "kb", tmp_path / "gone"])
    assert str(tmp_path / "kb") in caught.value.message
    assert len(caught.value.warnings) == 2


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ArticlesError, match="no readable article"):
        load_articles([tmp_path])


def test_no_paths_means_no_articles() -> None:
    assert load_articles([]) == ((), [])


def test_text_inside_articles_is_kept_as_written(tmp_path: Path) -> None:
    content = "# T\n\nUse {{product}} and {braces} and $1 and C:\\new."
    articles, _ = load_articles([write(tmp_path, "t.md", content)])
    assert articles[0].text == content


def test_the_example_help_centre_loads_cleanly() -> None:
    kb = EXAMPLES_KB
    articles, warnings = load_articles([kb])
    assert warnings == []
    assert 10 <= len(articles) <= 15
    assert len({a.title for a in articles}) == len(articles)
    assert {Path(a.path).suffix for a in articles} >= {".md", ".html", ".txt"}


def test_an_article_keeps_the_public_url_it_states(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.md",
        "---\ntitle: Refunds\nurl: 'https://help.acme.example/refunds'\n---\nText.",
    )
    write(
        tmp_path,
        "b.html",
        '<html><head><link rel="alternate" href="https://x.example/fr">'
        '<link rel="canonical" href="https://help.acme.example/invoices" />'
        "<title>Invoices</title></head><body><p>Text.</p></body></html>",
    )
    write(tmp_path, "c.md", "---\nurl: /relative/page\n---\n# Plans\n\nText.")
    write(tmp_path, "d.md", "# No front matter\n\nurl: https://not.front.matter/\n")
    articles = by_title(load_articles([tmp_path])[0])
    assert articles["Refunds"].url == "https://help.acme.example/refunds"
    assert articles["Invoices"].url == "https://help.acme.example/invoices"
    # An address a customer cannot open is none: nothing is guessed from it.
    assert articles["Plans"].url is None
    assert articles["No front matter"].url is None
