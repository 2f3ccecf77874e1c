"""The offline answer's sentences: whole, in the article's order, the ones that answer,
a command kept whole and verbatim, within the word limit."""

from __future__ import annotations

from gateway.knowledge.extract import MOST_UNITS, choose, plain, units
from gateway.model import Request, Source
from gateway.providers.local import LocalProvider
from prompts import WORD_LIMIT, count_words, rule_breaks

VACUUM = (
    "PostgreSQL databases require periodic maintenance known as vacuuming. For many "
    "installations it is sufficient to let the autovacuum daemon do it, as described in "
    "Section 25.1.6. You might need to adjust its parameters, e.g. autovacuum_naptime, "
    "in postgresql.conf to obtain the best results."
)
DUMP = (
    "The idea behind this dump method is to generate a file with SQL commands that "
    "recreate the database.\n\nThe basic usage of this command is:\n\n"
    "```\npg_dump dbname > dumpfile\n```\n\n"
    "As you see, pg_dump writes its result to the standard output."
)


def weights(*words: str) -> dict[str, float]:
    return dict.fromkeys(words, 1.0)


def test_sentences_keep_their_abbreviations_section_numbers_and_file_names() -> None:
    found = [u.text for u in units([VACUUM])]
    assert found == [
        "PostgreSQL databases require periodic maintenance known as vacuuming.",
        "For many installations it is sufficient to let the autovacuum daemon do it, as "
        "described in Section 25.1.6.",
        "You might need to adjust its parameters, e.g. autovacuum_naptime, in "
        "postgresql.conf to obtain the best results.",
    ]


def test_a_code_block_is_one_unit_kept_as_written() -> None:
    code = [u for u in units(["Run:\n\n```\nmake all\n  make  install   # twice\n```"]) if u.code]
    assert [u.text for u in code] == ["make all\n  make  install   # twice"]


def test_the_command_a_sentence_announces_comes_with_it_whole() -> None:
    chosen = choose(units([DUMP]), weights("dump", "command"), WORD_LIMIT)
    texts = [u.text for u in chosen]
    assert "The basic usage of this command is:" in texts
    assert "pg_dump dbname > dumpfile" in texts
    assert (
        texts.index("pg_dump dbname > dumpfile")
        == texts.index("The basic usage of this command is:") + 1
    )


def test_the_chosen_units_keep_the_articles_order_and_the_limit() -> None:
    many = " ".join(f"Step {n} says to vacuum table {n} now." for n in range(40))
    chosen = choose(units([many]), weights("vacuum"), 25)
    assert len(chosen) <= MOST_UNITS
    assert sum(u.words for u in chosen) <= 25
    numbers = [int(u.text.split()[1]) for u in chosen]
    assert numbers == sorted(numbers)


def test_a_list_of_steps_is_kept_whole() -> None:
    steps = "To delete your account:\n\n1. Open Settings.\n2. Click Delete account.\n3. Confirm."
    chosen = choose(units([steps]), weights("delet", "account"), WORD_LIMIT)
    assert [u.text for u in chosen] == [
        "To delete your account:",
        "Open Settings.",
        "Click Delete account.",
        "Confirm.",
    ]


def test_markdown_tables_become_plain_rows() -> None:
    assert plain("| Scope | Meaning |\n|---|---|\n| read | view only |") == (
        "Scope Meaning. read view only."
    )


def test_the_offline_answer_puts_the_command_on_its_own_lines_and_cites_outside_it() -> None:
    sources = (
        Source("backup.html", "Backup", "SQL Dump", DUMP, 60, 0, 0, 9.0, 0.9),
        Source("other.html", "Other", "", "Unrelated text about tables.", 6, 1, 0, 1.0, 0.4),
    )
    request = Request("", "What command makes a dump?", 400, sources=sources, ranked=True)
    from gateway.config import Deployment
    from gateway.model import ProviderKind

    local = LocalProvider(Deployment("local", ProviderKind.LOCAL, 10**6))
    answer = local.complete(request, timeout=5).text
    assert answer.startswith("From \u201cBackup\u201d: ")
    assert "\npg_dump dbname > dumpfile" in answer
    assert "[1]" in answer and "dumpfile [1]" not in answer
    assert count_words(answer) <= WORD_LIMIT
    assert rule_breaks(answer) == ()


def test_code_never_answers_alone() -> None:
    text = "Tables hold rows.\n\n```\nCREATE INDEX i ON t (c);\n```"
    chosen = choose(units([text]), weights("creat", "index", "tabl"), WORD_LIMIT)
    assert [u.text for u in chosen] == ["Tables hold rows."]
