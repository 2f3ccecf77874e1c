"""The text in a help-centre file that is not UTF-8: the legacy encodings help centres have.

Reached only when a file's bytes are not UTF-8 (nor UTF-16 with a byte-order mark), so a
UTF-8 help centre never loads any of it. What is read:

- an HTML page that declares its charset (`<meta charset>`, `<meta http-equiv=
  "Content-Type" content="…; charset=…">`, an XHTML `<?xml … encoding=…?>`, within its
  first 1,024 bytes, where the HTML standard looks), in that charset; as browsers do,
  ISO-8859-1 and ASCII are read as Windows-1252, their superset;
- a `.txt` file in Windows-1252 (or ISO-8859-1), the encoding of a Western Windows
  editor, when it reads as Western text: a Cyrillic or East Asian file decodes to
  Windows-1252 too, but as runs of accented letters and symbols, never as words.

Anything else is refused with the encoding to convert it from, when one can be told, and
the `iconv` line that does it.
"""

from __future__ import annotations

import codecs
import os
import re
import shlex

# Where the HTML standard's prescan looks for a declaration: the first 1,024 bytes.
_PRESCAN = 1024
_DECLARED = re.compile(
    rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)|"
    rb"\A(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._:-]+)",
    re.IGNORECASE,
)
_WESTERN = "cp1252"
# Read as Windows-1252 (the WHATWG Encoding Standard maps these labels to it).
_AS_WESTERN = frozenset({"cp1252", "iso8859-1", "latin-1", "ascii"})
# C0 controls no text file holds (tab, newline, form feed and carriage return are text).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def declared_charset(data: bytes, suffix: str) -> str | None:
    """The charset an HTML page declares, as written (None: it declares none)."""
    if suffix not in (".html", ".htm"):
        return None
    found = _DECLARED.search(data[:_PRESCAN])
    if found is None:
        return None
    return (found.group(1) or found.group(2)).decode("ascii")


def _western(data: bytes) -> str:
    try:
        return data.decode(_WESTERN)
    except UnicodeDecodeError:  # the five bytes cp1252 leaves undefined: C1 controls
        return data.decode("latin-1")


def _reads_as_western(text: str) -> bool:
    """Whether Windows-1252 text is words, not another encoding's bytes: a Western text's
    accented letters stand one or two in a word (`café`, `Größe`); a Cyrillic or East Asian
    text's bytes, read so, are runs of them."""
    if _CONTROL.search(text):
        return False
    runs = _NON_ASCII_RUN.findall(text)
    long = sum(len(run) for run in runs if len(run) > 2)
    return long * 4 <= sum(len(run) for run in runs)


def legacy(data: bytes, path: str) -> tuple[str | None, str]:
    """The text of the file at `path` whose bytes are not UTF-8, or None and why (with the
    command that converts it)."""
    suffix = os.path.splitext(path)[1].lower()
    label = declared_charset(data, suffix)
    if label is not None:
        try:
            name = codecs.lookup(label).name
        except LookupError:
            return None, (
                f"it declares charset {label!r}, which is not an encoding known here; "
                f"convert it to UTF-8: {_iconv(label.upper(), path)}"
            )
        if name == "utf-8":
            return None, "it declares UTF-8 but is not UTF-8; " + _convert(_guess(data), path)
        if name in _AS_WESTERN:
            return _western(data), ""
        try:
            return data.decode(name), ""
        except UnicodeDecodeError:
            return None, f"it is not in {label}, the charset it declares; " + _convert(
                _guess(data), path
            )
    if suffix == ".txt":
        text = _western(data)
        if _reads_as_western(text):
            return text, ""
    return None, "not UTF-8; " + _convert(_guess(data), path)


def _guess(data: bytes) -> str | None:
    """The encoding `data` is in, when it can be told cheaply (a Python codec name), else
    None. Only Windows-1252 can: a detector for the others (charset-normalizer) costs a
    third of a second to import and as much to guess, on every question that meets the file."""
    return _WESTERN if _reads_as_western(_western(data)) else None


def iconv_name(codec: str) -> str:
    """`iconv`'s name for a Python codec (`cp932` -> `CP932`, `mac-roman` -> `MACINTOSH`)."""
    name = codecs.lookup(codec).name
    special = {"mac-roman": "MACINTOSH", "iso8859-1": "ISO-8859-1", "latin-1": "ISO-8859-1"}
    return special.get(name, name.upper().replace("_", "-"))


def _iconv(source: str, path: str) -> str:
    quoted, converted = shlex.quote(path), shlex.quote(path + ".utf8")
    return f"iconv -f {source} -t UTF-8 {quoted} > {converted} && mv {converted} {quoted}"


def _convert(codec: str | None, path: str) -> str:
    """The fix: which encoding to convert from, and the command that does it."""
    if codec is None:
        return (
            f"convert it to UTF-8 from the encoding it was saved in (`file -bi "
            f"{shlex.quote(path)}` may name it): {_iconv('ENCODING', path)}"
        )
    source = iconv_name(codec)
    return f"it looks like {source}: convert it with {_iconv(source, path)}"
