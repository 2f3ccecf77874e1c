"""Another commit's tree, to measure against this one in the same run: exported with `git
archive` into the run's scratch folder (once per run), run with this interpreter and its
packages (`PYTHONPATH` set to the tree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.context import Context

ROOT = Path(__file__).resolve().parent.parent


def exported(ctx: Context, commit: str, under: str) -> Path:
    """`commit` exported into the scratch folder `under` (once per run)."""
    folder = ctx.folder(under) / f"support-ask-{commit.replace('^', '-parent')}"
    if not (folder / "gateway").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def working_copy(ctx: Context, under: str) -> Path:
    """This checkout's files as they are now (tracked or new, edits included, nothing
    ignored), copied as `exported` copies a commit: both trees then look up the same
    things (no build metadata or caches in one that the other lacks)."""
    folder = ctx.folder(under) / "support-ask-working"
    if not (folder / "gateway").is_dir():
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "-c", "-o", "--exclude-standard"],
            check=True,
            capture_output=True,
        ).stdout
        names = [n for n in listed.decode().split("\0") if n and (ROOT / n).is_file()]
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["tar", "-c", "-C", str(ROOT), "--null", "-T", "-"],
            input="\0".join(names).encode(),
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def resolved(ref: str) -> str | None:
    """The commit `ref` names in this checkout, or None (no git, no such ref)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
