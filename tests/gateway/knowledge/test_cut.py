"""The kept index's first cut: a large help centre's best passages are the ones ranking
every passage finds, and a small one is ranked whole."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gateway.knowledge import cut
from gateway.knowledge.files import discover
from gateway.knowledge.rank import rank
from gateway.knowledge.store import SqliteIndex
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
