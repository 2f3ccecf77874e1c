from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import prompts
from gateway.model import Article
from prompts import (
    NOT_COVERED,
    WORD_LIMIT,
    PromptError,
    is_not_covered,
    load_prompt,
    not_covered,
    render,
    rule_breaks,
    template_warnings,
)


def article(
    title: str = "Resetting your password", text: str = "Click Forgot password."
) -> Article:
    return Article(title=title, path=f"kb/{title.lower().replace(' ', '-')}.md", text=text)


def test_bundled_prompt_states_the_rules_the_code_enforces() -> None:
    template = load_prompt(None)
    assert "{{product}}" in template
    assert "{{articles}}" in template
    # The offline deployment and the evaluation use these constants: the prompt must say
    # the very same things, or the models and the checks would disagree.
    assert NOT_COVERED in template
    assert f"{WORD_LIMIT} words" in template
    assert "markdown" in template
    assert template_warnings(template) == []


def test_bundled_prompt_names_no_model_or_provider() -> None:
    template = load_prompt(None)
    assert not re.search(r"openai|anthropic|gemini|claude|gpt", template, re.IGNORECASE)


def test_render_fills_product_and_articles_with_titles_and_sources() -> None:
    rendered = render(
        load_prompt(None),
        product="Acme Cloud",
        articles=[article(), article("Refunds", "Refunds take 5 days.")],
    )
    assert "{{" not in rendered
    assert "support assistant for Acme Cloud" in rendered
    assert "I could not find that in the Acme Cloud help centre." in rendered
    assert "[1] Article: Resetting your password\nSource: kb/resetting-your-password.md" in rendered
    assert "Click Forgot password." in rendered
    # Stable order: the articles appear in the order given, numbered as cited.
    assert rendered.index("Resetting your password") < rendered.index("[2] Article: Refunds")


@pytest.mark.parametrize(
    "text",
    [
        "Type {{product}} into the box.",
        "Use {{articles}} and {curly} and {{ spaced }} braces.",
        r"Replace with $1 and \1 and \g<0> and C:\new\table.",
        "{{product}}{{articles}}",
    ],
)
def test_article_text_is_never_interpreted(text: str) -> None:
    rendered = render("P={{product}}\n{{articles}}", product="Acme", articles=[article(text=text)])
    assert rendered.startswith("P=Acme\n")
    assert text in rendered


def test_product_name_is_inserted_literally() -> None:
    rendered = render("{{product}} / {{articles}}", product=r"Acme \1 {{articles}}", articles=[])
    assert rendered.startswith(r"Acme \1 {{articles}} / ")


def test_placeholders_allow_spaces_and_unknown_ones_stay_as_written() -> None:
    template = "{{ product }} {{prodcut}} {{articles}}"
    rendered = render(template, product="Acme", articles=[])
    assert rendered.startswith("Acme {{prodcut}} ")
    warnings = template_warnings(template)
    assert len(warnings) == 1
    assert "{{prodcut}}" in warnings[0]


def test_a_prompt_without_articles_slot_is_warned_about() -> None:
    warnings = template_warnings("You help with {{product}}.")
    assert any("{{articles}}" in w for w in warnings)


def test_no_articles_renders_an_explicit_note() -> None:
    rendered = render("{{articles}}", product="Acme", articles=[])
    assert rendered == "(No articles were provided.)"


def test_custom_prompt_is_loaded_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "mine.md"
    path.write_text("\ufeffBe brief about {{product}}.\n{{articles}}\n", encoding="utf-8")
    assert load_prompt(path) == "Be brief about {{product}}.\n{{articles}}\n"


def test_missing_prompt_names_the_path_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "nope.md"
    with pytest.raises(PromptError) as caught:
        load_prompt(path)
    assert str(path) in str(caught.value)
    assert "prompt:" in str(caught.value)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("content", "expected"),
    [(b"", "empty"), (b"  \n", "empty"), (b"\xff\xfe\x00bad", "UTF-8")],
)
def test_unusable_prompt_files_are_reported(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "prompt.md"
    path.write_bytes(content)
    with pytest.raises(PromptError, match=expected):
        load_prompt(path)


def test_a_directory_is_not_a_prompt(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="directory"):
        load_prompt(tmp_path)


def test_broken_install_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts, "BUNDLED_PROMPT", "missing.md")
    with pytest.raises(PromptError, match="reinstall"):
        load_prompt(None)


_BUNDLED_PROBE = (
    "import sys, prompts\n"
    "text = prompts.load_prompt(None)\n"
    "print(prompts.__file__.replace('\\\\', '/'), '{{articles}}' in text, "
    "'importlib.resources' in sys.modules)\n"
)


def _probe(path: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _BUNDLED_PROBE],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": path},
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_bundled_prompt_is_read_beside_the_package(tmp_path: Path) -> None:
    # Every question loads it: a plain file read, without importlib.resources' imports.
    here = str(Path(prompts.__file__).parent.parent)
    assert _probe(here, tmp_path)[1:] == ["True", "False"]


def test_the_bundled_prompt_is_found_in_a_zip_install(tmp_path: Path) -> None:
    package = Path(prompts.__file__).parent
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("__init__.py", prompts.BUNDLED_PROMPT):
            zipped.write(package / name, f"prompts/{name}")
    where, has_articles_slot, _ = _probe(str(archive), tmp_path)
    assert where.startswith(archive.as_posix())
    assert has_articles_slot == "True"


def test_not_covered_sentence() -> None:
    assert not_covered("Acme Cloud") == (
        "I could not find that in the Acme Cloud help centre. "
        "Would you like me to open a support ticket?"
    )
    assert not_covered("").startswith("I could not find that in the help centre.")
    assert is_not_covered(
        "i could not find that in the ACME CLOUD help centre.\nWould you like me to "
        "open a support ticket?",
        "Acme Cloud",
    )
    assert not is_not_covered("Go to Settings.", "Acme Cloud")


@pytest.mark.parametrize(
    ("answer", "broken"),
    [
        ("## Steps\nOpen Settings.", "heading"),
        ("Do this:\n- Open Settings", "bullet list"),
        ("1. Open Settings\n2. Click Save", "numbered list"),
        ("Click **Save**.", "bold"),
        ("Click *Save* now.", "italics"),
        ("Run `acme login`.", "code"),
        ("See [the guide](https://example.com).", "link"),
        ("| a | b |", "table"),
        ("I am ChatGPT.", "names an AI"),
        ("Powered by Claude.", "names an AI"),
        ("word " * (WORD_LIMIT + 1), "over the limit"),
    ],
)
def test_rule_breaks_catch_each_rule(answer: str, broken: str) -> None:
    assert any(broken in b for b in rule_breaks(answer))


def test_plain_answers_break_no_rule() -> None:
    answer = (
        "Open Settings, then Security, and click Reset password. The link expires in 1 hour; "
        "5 * 3 = 15 is fine, and so is a snake_case_name. " + "word " * 80
    )
    assert rule_breaks(answer) == ()
    assert rule_breaks(not_covered("Acme Cloud")) == ()


def test_passages_are_numbered_as_sent_and_the_prompt_asks_for_those_markers() -> None:
    from gateway.model import Source
    from prompts import HANDOFF_MARKER

    passages = [
        Source("kb/refunds.md", "Refunds", "", "Refunds take 5 days.", 6, 3, 0),
        Source("kb/refunds.md", "Refunds", "Annual plans", "Ask billing.", 4, 3, 2),
        Source("kb/plans.md", "Plans", "Prices", "Plans cost $5.", 5, 1, 1),
    ]
    rendered = render(load_prompt(None), product="Acme Cloud", articles=[], passages=passages)
    assert rendered.count("Article: Refunds\nSource: kb/refunds.md") == 1
    assert "[1] Refunds take 5 days." in rendered
    assert "[2] ## Annual plans\n\nAsk billing." in rendered
    assert "Article: Plans\nSource: kb/plans.md\n\n[3] ## Prices" in rendered
    assert "such as [1]" in rendered
    assert f"begin your reply with {HANDOFF_MARKER}" in rendered
