"""Help-centre files in the legacy encodings help centres really have: read, or refused
with the encoding to convert from and the command that does it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.knowledge.load import load_articles, parse

FRENCH = "Réinitialiser votre mot de passe\n\nCliquez sur « Mot de passe oublié » : c’est tout.\n"


def test_a_utf8_byte_order_mark_is_not_text() -> None:
    article, _ = parse("kb/reset.md", "\ufeff# Reset\n\nClick it.\n".encode())
    assert article is not None and article.title == "Reset"
    assert article.text.startswith("# Reset")


def test_a_windows_1252_text_file_is_read() -> None:
    article, problem = parse("kb/reset.txt", FRENCH.encode("cp1252"))
    assert problem == "" and article is not None
    assert article.title == "Réinitialiser votre mot de passe"
    assert "« Mot de passe oublié » : c’est tout." in article.text


def test_a_latin_1_text_file_is_read() -> None:
    article, _ = parse("kb/prices.txt", "Prix\n\nLe caf\xe9 co\xfbte 2 \xa3.\n".encode("latin-1"))
    assert article is not None and "Le café coûte 2 £." in article.text


@pytest.mark.parametrize(
    ("declaration", "charset"),
    [
        ('<meta charset="windows-1252">', "cp1252"),
        ('<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">', "latin-1"),
        ("<meta charset=iso-8859-15>", "iso8859-15"),
        ('<meta charset="shift_jis">', "shift_jis"),
    ],
)
def test_html_is_read_in_the_charset_it_declares(declaration: str, charset: str) -> None:
    title = "パスワード" if charset == "shift_jis" else "Café crème"
    page = f"<html><head>{declaration}<title>x</title></head><body><h1>{title}</h1><p>Ok.</p>"
    article, problem = parse("kb/page.html", page.encode(charset))
    assert problem == "" and article is not None and article.title == title


def test_an_xhtml_page_declares_its_encoding_in_the_xml_declaration() -> None:
    page = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<html><body><h1>Caf\xe9</h1></body>'
    article, _ = parse("kb/page.html", page.encode("latin-1"))
    assert article is not None and article.title == "Café"


def test_a_western_file_that_cannot_be_read_names_cp1252_and_the_command() -> None:
    _, problem = parse("kb/old notes.md", FRENCH.encode("cp1252"))
    assert problem == (
        "not UTF-8; it looks like CP1252: convert it with iconv -f CP1252 -t UTF-8 "
        "'kb/old notes.md' > 'kb/old notes.md.utf8' && mv 'kb/old notes.md.utf8' 'kb/old notes.md'"
    )


@pytest.mark.parametrize("encoding", ["cp1251", "shift_jis", "gbk"])
def test_another_encoding_is_never_read_as_western(encoding: str) -> None:
    text = {"cp1251": "Сброс пароля\n\nНажмите «Забыли пароль».\n",
            "shift_jis": "パスワードのリセット\n\nログイン画面でクリックします。\n",
            "gbk": "重置密码\n\n在登录页面点击忘记密码。\n"}[encoding]  # fmt: skip
    article, problem = parse("kb/reset.txt", text.encode(encoding))
    assert article is None
    assert problem.startswith("not UTF-8; convert it to UTF-8 from the encoding it was saved in")
    assert "iconv -f ENCODING -t UTF-8 kb/reset.txt" in problem


def test_html_that_is_not_in_its_declared_charset_says_so() -> None:
    _, problem = parse("kb/p.html", '<meta charset="utf-8"><h1>Caf\xe9</h1>'.encode("latin-1"))
    assert problem.startswith("it declares UTF-8 but is not UTF-8; it looks like CP1252")
    _, problem = parse("kb/p.html", '<meta charset="x-klingon"><h1>Caf\xe9</h1>'.encode("latin-1"))
    assert problem.startswith("it declares charset 'x-klingon', which is not an encoding known")


@pytest.mark.skipif(shutil.which("iconv") is None, reason="needs iconv")
def test_the_command_in_the_warning_makes_the_file_readable(tmp_path: Path) -> None:
    (tmp_path / "reset.md").write_bytes(("# " + FRENCH).encode("cp1252"))
    (tmp_path / "other.md").write_text("# Other\n\nText.\n")
    articles, warnings = load_articles([tmp_path])
    assert [a.title for a in articles] == ["Other"]
    command = warnings[0].split("convert it with ", 1)[1]
    subprocess.run(command, shell=True, check=True)
    articles, warnings = load_articles([tmp_path])
    assert warnings == []
    assert [a.title for a in articles] == ["Other", "Réinitialiser votre mot de passe"]
