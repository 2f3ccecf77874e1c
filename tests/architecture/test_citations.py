"""The repository stands alone: what its comments cite, a reader of it can open.

Comments, docstrings, script comments and the provider fixtures' sources cite the pages
under docs/ (or a public source), never a development machine's path or a document kept
outside the repository; every docs/ page and section cited exists. (The links between the
pages themselves are tests/test_readme.py's to check.)
"""

from __future__ import annotations

from pathlib import Path

from tests.architecture.citations import broken, doc_citations, outside, python_texts, texts


def test_no_comment_cites_a_machine_path_or_a_document_outside_the_repository() -> None:
    wrong = [
        f"{t}: {', '.join(kinds)}: {t.text.strip()[:80]}"
        for t in texts()
        if (kinds := outside(t.text))
    ]
    assert wrong == []


def test_every_docs_page_and_section_cited_in_code_exists() -> None:
    cited = [(t, page, anchor) for t in texts() for page, anchor in doc_citations(t.text)]
    assert cited, "no comment cites docs/: the check would see nothing"
    wrong = [f"{t}: {why}" for t, page, anchor in cited if (why := broken(page, anchor))]
    assert wrong == []


def test_the_checks_see_an_outside_citation_and_a_broken_one(tmp_path: Path) -> None:
    source = (
        '"""Sources are in /work/shared/provider-reference.md."""\n'
        "# As the design's table says (reference §5.3); see issue 12.\n"
        "X = '/home/user is data, not a citation'\n"
    )
    found = [what for t in python_texts(tmp_path / "m.py", source) for what in outside(t.text)]
    assert set(found) == {
        "a machine's path",
        "an outside document",
        "an outside document's section",
        "the design",
        "an issue",
    }
    assert outside("the design of the loop; an issue thread (openai/codex#7250)") == []

    assert list(doc_citations("docs/a.md#one, #two and #three, docs/b.md")) == [
        ("docs/a.md", "one"),
        ("docs/a.md", "two"),
        ("docs/a.md", "three"),
        ("docs/b.md", None),
    ]
    assert list(doc_citations("platform.openai.com/docs/guides/error-codes.md")) == []
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "p.md").write_text("# Page\n\n## `x-should-retry`\n")
    assert broken("docs/p.md", "x-should-retry", base=tmp_path) is None
    assert broken("docs/p.md", "nowhere", base=tmp_path) == "docs/p.md has no section #nowhere"
    assert broken("docs/q.md", None, base=tmp_path) == "docs/q.md does not exist"
