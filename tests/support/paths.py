"""Where the repository is, for tests that read its files (examples, the sample config)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_KB = REPO / "examples" / "kb"
