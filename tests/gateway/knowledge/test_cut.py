"""The kept index's first cut: a large help centre's best passages are the ones ranking
every passage finds, and a small one is ranked whole."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gateway.knowledge import cut
from gateway.knowledge.files import discover
from gateway.knowledge.rank import rank
from gateway.knowledge.select import best_within
from gateway.knowledge.store import SqliteIndex
from gateway.knowledge.terms import query_terms
from gateway.record import replace
from tests.support.helpcentre import age

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "da", "zu", "ri", "mo")
# A help centre's words, drawn with Zipf's weights (the n-th word 1/n as often as the
# first), as a language's are: a few in every passage, most in a handful.
VOCABULARY = tuple(
    sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES})[::2]
)
WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def write_manual(root: Path, pages: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    weights = WEIGHTS
    for number in range(pages):
        sections = []
        for _ in range(rng.randint(2, 9)):
            heading = " ".join(rng.choices(VOCABULARY, weights, k=2))
            words = rng.choices(VOCABULARY, weights, k=rng.randint(30, 160))
            sections.append(f"<h2>{heading}</h2><p>{' '.join(words)}.</p>")
        title = " ".join(rng.choices(VOCABULARY, weights, k=3))
        page = root / f"part{number % 5}" / f"page-{number:04d}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        age(page, f"<html><body><h1>{title}</h1>{''.join(sections)}</body></html>")


def opened(root: Path) -> SqliteIndex:
    index = SqliteIndex.open(None, [root], warn=pytest.fail)
    index.refresh(discover([root])[0])
    return index


def test_the_cut_finds_the_best_passages_that_ranking_every_passage_finds(
    tmp_path: Path,
) -> None:
    write_manual(tmp_path / "kb", 240)
    index = opened(tmp_path / "kb")
    rng = random.Random(3)
    for _ in range(20):
        question = " ".join(rng.sample(VOCABULARY[10:400], 4))
        index.cut = cut.DEFAULT
        with_cut = rank(question, index)
        index.cut = None
        every = rank(question, index)
        assert with_cut[:10] == every[:10], question
        assert len(with_cut) < len(every)  # the cut left passages out
    index.close()


def test_a_large_set_is_cut_to_a_bounded_number_of_articles(tmp_path: Path) -> None:
    write_manual(tmp_path / "kb", 240)
    index = opened(tmp_path / "kb")
    words = list(VOCABULARY[:3])
    assert len({key[0] for key in index.hits(words).facts}) <= cut.DEFAULT.articles
    index.cut = None
    assert len({key[0] for key in index.hits(words).facts}) > 200
    index.close()


def test_a_set_no_larger_than_the_cut_keeps_is_ranked_whole(tmp_path: Path) -> None:
    write_manual(tmp_path / "kb", cut.DEFAULT.articles)
    index = opened(tmp_path / "kb")
    words = [VOCABULARY[0], VOCABULARY[50], VOCABULARY[500]]
    with_cut = index.hits(words)
    index.cut = None
    assert with_cut == index.hits(words)
    index.close()


def test_a_large_budget_reaches_an_answer_further_down_than_the_default_cut_keeps(
    tmp_path: Path,
) -> None:
    # 120 short notes mention the word, each more to the point by BM25 than the one long
    # section that answers (and together about 8,000 tokens): the default cut keeps the
    # notes and not the answer, which a 16,000-token prompt has room for after them.
    write_manual(tmp_path / "kb", 300)
    rng = random.Random(5)
    for number in range(120):
        words = " ".join(rng.choices(VOCABULARY, k=40))
        age(tmp_path / "kb" / f"note-{number:03d}.html",
            f"<html><body><h1>Note {number}</h1><p>{words} zorblat.</p></body></html>")  # fmt: skip
    answer = " ".join(rng.choices(VOCABULARY, k=150))
    age(tmp_path / "kb" / "dial.html",
        f"<html><body><h1>The dial</h1><p>{answer} A zorblat is set by turning the dial "
        "back to zero.</p></body></html>")  # fmt: skip
    index = opened(tmp_path / "kb")
    assert index.size().articles > cut.DEFAULT.within(16_000).articles  # the cut applies
    question = "What is a zorblat?"

    def answered(budget: int) -> bool:
        sources = best_within(question, index, budget).sources
        return any("turning the dial" in s.text for s in sources)

    assert answered(16_000)
    assert not answered(6_000)  # its prompt is full of the notes
    index.close()


def test_the_cut_grows_with_the_budget_and_never_below_its_sizes() -> None:
    first = cut.DEFAULT
    assert first.within(None) == first.within(2_000) == first.within(6_000) == first
    assert first.within(16_000).articles >= first.articles * 16_000 / 6_000
    assert first.within(12_000).by_title == 2 * first.by_title


def test_the_rarest_words_are_searched_while_their_rows_fit_the_bound() -> None:
    df = {"common": 900, "rare": 10, "middling": 120, "scarce": 40, "absent": 0}
    units = 10_000  # a share of 1/8 is 1,250: none is too common on its own
    bounded = replace(cut.DEFAULT, postings=200)
    assert bounded.searched(df, units) == ["rare", "scarce", "middling"]  # 170 rows
    assert replace(bounded, postings=100).searched(df, units) == ["rare", "scarce"]
    # Never fewer than the rarest two, whatever their rows.
    assert replace(bounded, postings=5).searched(df, units) == ["rare", "scarce"]
    assert replace(bounded, postings=None).searched(df, units) == [
        "rare", "scarce", "middling", "common"
    ]  # fmt: skip
    assert cut.DEFAULT.within(12_000).postings == 2 * cut.DEFAULT.postings


def test_a_bound_on_rows_searched_still_finds_the_best_passages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_manual(tmp_path / "kb", 240)
    index = opened(tmp_path / "kb")
    bounded = replace(cut.DEFAULT, postings=200)
    searched: list[list[str]] = []  # the words each search of the index was for
    candidates = cut.Cut.candidates

    def spied(self: cut.Cut, db: Any, words: Sequence[str], titled: Sequence[str]) -> list[int]:
        searched.append(list(words))
        return candidates(self, db, words, titled)

    monkeypatch.setattr(cut.Cut, "candidates", spied)
    rng = random.Random(3)
    left_out = 0
    for _ in range(20):
        question = " ".join(rng.sample(VOCABULARY[10:400], 4))
        index.cut = replace(bounded, postings=None)
        df = index.hits(query_terms(question)).df
        unbounded = searched.pop()
        index.cut = bounded
        with_bound = rank(question, index)
        words = searched.pop()
        rows = sum(df[word] for word in words)
        assert rows <= 200 or len(words) == 2
        left_out += rows < sum(df[word] for word in unbounded)
        index.cut = None
        assert with_bound[:3] == rank(question, index)[:3], question
    assert left_out >= 10  # the bound left words out of most searches
    index.close()


def test_a_word_that_reads_as_a_search_operator_is_searched_as_a_word(tmp_path: Path) -> None:
    write_manual(tmp_path / "kb", 100)
    age(tmp_path / "kb" / "stores.md", "# Our stores\n\nThere is a store near every station.\n")
    index = opened(tmp_path / "kb")
    best = rank("Is there a store near the station?", index)[0]
    assert index.fetch([best.key])[0].path.endswith("stores.md")
    index.close()


def test_counts_are_of_whole_terms_repeats_and_neighbours_included() -> None:
    wanted = cut.needles(["backup", "restor"])
    assert cut.counts("backup backup restor backups prebackup backup", wanted) == {
        "backup": 3,
        "restor": 1,
    }
    assert cut.counts("", wanted) == {}
    # Three in a row, at either end, and alone: each counted once.
    assert cut.counts("backup backup backup", wanted) == {"backup": 3}
    assert cut.counts("restor backup restor", wanted) == {"restor": 2, "backup": 1}
    assert cut.counts("backup", wanted) == {"backup": 1}
