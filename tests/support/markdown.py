"""Reading the repository's Markdown pages as GitHub shows them."""

from __future__ import annotations

import re


def anchors(text: str) -> set[str]:
    """The ids GitHub gives a page's headings: lower case, punctuation dropped, spaces as -."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # a `# comment` in a block is no heading
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#{1,6} (.+)$", prose, flags=re.M)
    }
