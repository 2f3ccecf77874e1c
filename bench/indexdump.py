"""Whether two trees build the same first index: every row of each table (files, passages,
terms, titles, both vocabularies, meta but the refresh time), ids included, dumped and
compared. Run: python -m bench.indexdump TREE_A TREE_B SET... (a private cache per build)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.procs import child_env

TABLES = ("meta", "files", "passages", "terms", "titles", "terms_vocab", "terms_rows",
          "titles_vocab", "titles_rows")  # fmt: skip
_VARIES = {"refreshed", "refreshed_at", "refresh"}  # meta keys that say when, not what


def build(tree: Path, folder: Path, home: Path) -> Path:
    env = child_env(home, {"PYTHONPATH": str(tree)})
    argv = [sys.executable, "-m", "cli", "index", str(folder.resolve()), "-q"]
    subprocess.run(argv, env=env, check=True, cwd=home)
    (found,) = [p for p in (home / "cache").rglob("*") if p.is_file() and _is_db(p)]
    return found


def _is_db(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def dump(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path)
    out = {}
    for table in TABLES:
        keyed = table in ("files", "passages", "terms", "titles")
        rows = db.execute(f"SELECT {'rowid, ' if keyed else ''}* FROM {table}").fetchall()
        if table == "meta":
            rows = [r for r in rows if r[0] not in _VARIES]
        out[table] = hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()
        out[table + " rows"] = str(len(rows))
    db.close()
    return out


def main(argv: list[str]) -> int:
    a, b, *sets = (Path(x) for x in argv)
    same = True
    for folder in sets:
        dumps = []
        for tree in (a, b):
            with tempfile.TemporaryDirectory(prefix="indexdump-") as home:
                dumps.append(dump(build(tree.resolve(), folder, Path(home))))
        for key in dumps[0]:
            ok = dumps[0][key] == dumps[1].get(key)
            same &= ok
            print(f"{folder.name:>8} {key:>18}: {'same' if ok else 'DIFFER'} {dumps[0][key][:16]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
