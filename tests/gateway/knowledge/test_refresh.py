"""`articles.refresh: on_index`: a question reads the kept index as `support-ask index` left
it, walking nothing, but only for the settings it was made for; every other case walks."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.runtime import wiring
from cli.runtime.failure import CliError
from gateway.config import ArticleSettings, Config, load_default_config
from gateway.config.model import RefreshRule
from gateway.knowledge import centre, indexfile, kept
from gateway.knowledge.files import ArticleCaps, discover
from gateway.knowledge.index import Index, MemoryIndex
from gateway.knowledge.rank import rank
from gateway.knowledge.store import SqliteIndex
from gateway.record import replace
from tests.support.helpcentre import age, write_centre
from tests.support.paths import EXAMPLES_KB

OLD = "# Refunds\n\nA refund of an annual plan takes fourteen days to reach the card.\n"
NEW = "# Refunds\n\nA refund of an annual plan now takes three days to reach the card.\n"


def config(**articles: object) -> Config:
    settings = replace(ArticleSettings(), **{"refresh": RefreshRule.ON_INDEX, **articles})
    return replace(load_default_config(), articles=settings)


def ask(root: Path, settings: Config, said: list[str] | None = None) -> Index:
    """The index a question opens (`said`: its warnings)."""
    warn = pytest.fail if said is None else said.append
    index = wiring.open_help_centre([root], settings, whole=False, warn=warn)
    assert index is not None
    return index


def index_command(root: Path, settings: Config) -> None:
    index = wiring.open_help_centre([root], settings, whole=False, warn=pytest.fail, walk=True)
    assert isinstance(index, SqliteIndex)
    index.close()


def text_of(index: Index, question: str) -> str:
    best = rank(question, index)[0]
    return index.fetch([best.key])[0].text


def walks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def walk(*_: object) -> object:
        raise AssertionError("the question walked the help centre")

    monkeypatch.setattr(centre, "discover", walk)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    write_centre(kb, 30)
    age(kb / "refunds.md", OLD)
    return kb


def test_a_question_answers_from_the_index_as_built_until_the_index_command_runs(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_index = config()
    index_command(root, on_index)
    age(root / "refunds.md", NEW)
    age(root / "flamingos.md", "# Flamingos\n\nFlamingos stand on one leg.\n")
    (root / "part1" / "page-00001.html").unlink()
    with monkeypatch.context() as patch:
        walks_nothing(patch)
        trusted = ask(root, on_index)
        assert isinstance(trusted, SqliteIndex) and trusted.size().articles == 31
        assert "fourteen days" in text_of(trusted, "refund annual plan")
        assert not rank("flamingos stand", trusted)
        trusted.close()
    index_command(root, on_index)
    walks_nothing(monkeypatch)
    after = ask(root, on_index)
    assert "three days" in text_of(after, "refund annual plan")
    assert rank("flamingos stand", after)
    assert after.size().articles == 31  # flamingos in, the page removed out
    after.close()


def test_every_questions_rule_reads_an_edit_to_an_index_the_index_command_made(
    root: Path,
) -> None:
    index_command(root, config())
    age(root / "refunds.md", NEW)
    every = ask(root, config(refresh=RefreshRule.EVERY_QUESTION))
    assert "three days" in text_of(every, "refund annual plan")
    every.close()


def test_with_no_index_yet_the_question_walks_builds_it_and_the_next_trusts_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ask(root, config())
    assert isinstance(first, SqliteIndex) and first.path != ":memory:"
    first.close()
    age(root / "refunds.md", NEW)
    walks_nothing(monkeypatch)
    second = ask(root, config())
    assert "fourteen days" in text_of(second, "refund annual plan")
    second.close()


def test_a_page_a_new_exclude_pattern_leaves_out_is_not_served_from_the_index(
    root: Path,
) -> None:
    index_command(root, config())
    left_out = config(exclude=("refunds.md",))
    index = ask(root, left_out)
    assert index.size().articles == 30
    assert all(
        index.fetch([r.key])[0].path != str(root / "refunds.md")
        for r in rank("refund annual plan fourteen", index)
    )
    index.close()


def test_lowered_caps_are_walked_and_warned_about_not_trusted(root: Path) -> None:
    index_command(root, config())
    said: list[str] = []
    small_pages = config(max_article_bytes=200)
    index = ask(root, small_pages, said)
    assert said and all("skipped" in line for line in said)
    assert index.size().articles == 1  # refunds.md alone is under 200 bytes
    index.close()


def test_a_trusted_question_warns_about_the_files_skipped_as_a_walk_would(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "binary.md").write_bytes(b"PK\x03\x04\x00\x00zip inside")
    age(root / "binary.md")
    index_command_said: list[str] = []
    built = wiring.open_help_centre(
        [root], config(), whole=False, warn=index_command_said.append, walk=True
    )
    assert built is not None
    built.close()
    walks_nothing(monkeypatch)
    said: list[str] = []
    ask(root, config(), said).close()
    assert said == index_command_said == [f"skipped {root / 'binary.md'}: not a text file (binary)"]


def test_a_small_help_centre_is_still_read_directly() -> None:
    index = ask(EXAMPLES_KB, config())
    assert isinstance(index, MemoryIndex) and index.size().articles == 12


def test_an_index_whose_walk_was_kept_for_no_settings_or_others_is_not_trusted(
    root: Path, tmp_path: Path
) -> None:
    # A walk kept by a version before the settings began it (asked nothing), or for other
    # patterns, arranges nothing; the walk kept for these does.
    found = discover([root])[0]
    these = kept.asked((), ArticleCaps())
    with SqliteIndex.open(tmp_path / "i.sqlite", [root], warn=pytest.fail) as index:
        index.refresh(found)
        assert not index.trusted(these)
        index.refresh(found, asked=kept.asked(("*.html",), ArticleCaps()))
        assert not index.trusted(these)
        index.refresh(found, asked=these)
        assert index.trusted(these) and index.size().articles == 31


def test_an_unsettled_file_leaves_nothing_to_trust_so_the_next_question_walks(
    root: Path,
) -> None:
    index_command(root, config())
    (root / "refunds.md").write_text(NEW)  # just now: read again by the next walk
    index_command(root, config())
    path = indexfile.index_path(wiring.cache_dir(), [root])
    with SqliteIndex.open(path, [root], warn=pytest.fail) as index:
        assert not index.trusted(kept.asked((), ArticleCaps()))
    age(root / "refunds.md")
    again = ask(root, config())
    assert "three days" in text_of(again, "refund annual plan")
    again.close()


def test_a_set_past_caps_lowered_since_the_index_is_refused_not_trusted(root: Path) -> None:
    index_command(root, config())
    with pytest.raises(CliError) as refused:
        ask(root, config(max_set_files=10))
    assert refused.value.code == 66 and "articles.max_set_files" in refused.value.message
