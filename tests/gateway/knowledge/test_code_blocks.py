"""Code is never a heading: a <pre>, a block that is one <code>, a Markdown fenced block."""

from __future__ import annotations

from gateway.knowledge.load import parse
from gateway.knowledge.passages import split

# As PostgreSQL's manual writes pg_hba.conf examples: comment lines inside <pre>.
PG_HBA = """<html><head><title>pg_hba.conf</title></head><body>
<h1>The pg_hba.conf File</h1>
<p>Client authentication is controlled by a configuration file.</p>
<h2>Examples</h2>
<pre class="programlisting">
# Allow any user on the local system to connect to any database with
# any database user name using Unix-domain sockets.
#
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     trust

# and port 5432 as the user "foo" with a password
host    all             foo             127.0.0.1/32            md5
</pre>
<p><code># TYPE DATABASE USER</code></p>
<p><code>PGPASSWORD</code></p>
<h2>Changing a password</h2>
<p>Run <code>ALTER ROLE foo PASSWORD 'secret'</code> as a superuser.</p>
</body></html>"""


def headings(path: str, text: str) -> list[str]:
    article, problem = parse(path, text.encode())
    assert article is not None, problem
    return [p.heading for p in split(article) if p.first]


def test_comment_lines_inside_pre_are_no_headings() -> None:
    assert headings("manual/auth-pg-hba-conf.html", PG_HBA) == [
        "",
        "Examples",
        "Changing a password",
    ]


def test_the_code_is_kept_whole_under_its_heading() -> None:
    article, _ = parse("manual/auth-pg-hba-conf.html", PG_HBA.encode())
    assert article is not None
    examples = next(p for p in split(article) if p.heading == "Examples")
    body = examples.body(article)
    assert '# and port 5432 as the user "foo" with a password\nhost    all' in body
    assert "# TYPE DATABASE USER" in body and "PGPASSWORD" in body
    # Inline code stays inline text.
    assert "Run ALTER ROLE foo PASSWORD 'secret' as a superuser." in article.text


def test_a_markdown_code_block_holds_no_heading_and_no_title() -> None:
    text = (
        "```sh\n# Reset the cache\nrm -rf cache\n```\n\n"
        "Some text.\n\n# Resetting the cache\n\n"
        "````md\n```\n# Not a heading\n```\n````\n\n"
        "~~~\n# Nor this\n```\n# Nor this one\n~~~\n\n## Afterwards\n\nDone.\n"
    )
    article, _ = parse("kb/cache.md", text.encode())
    assert article is not None and article.title == "Resetting the cache"
    # Text before the title heading, the title's own section, then the one real heading.
    assert [p.heading for p in split(article) if p.first] == ["", "", "Afterwards"]


def test_a_heading_made_of_code_is_still_a_heading() -> None:
    page = "<h1>Tools</h1><h2><code>pg_dump</code></h2><p>Backs up.</p>"
    assert headings("manual/tools.html", page) == ["pg_dump"]


def test_a_pre_keeps_the_spaces_before_its_first_code_with_either_reader() -> None:
    # lxml reports the spaces before <code> as text of their own; outside a <pre> such
    # blank text before a block's first word is dropped, inside it is the indentation.
    from gateway.knowledge.htmltext import standard, with_lxml

    page = "<html><body><p>Set it:</p>\n\n<pre>    <code>x = 1</code>\ny = 2</pre></body></html>"
    for reader in (standard, with_lxml):
        article, problem = parse("manual/set.html", page.encode(), reader)
        assert article is not None, problem
        assert article.text == "Set it:\n\n```\n    x = 1\ny = 2\n```"
