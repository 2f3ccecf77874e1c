"""The sample's product name, and the one warning when it misfits a user's own help centre.

The bundled config (the sample's) names its product "Acme Cloud", the product of the
example help centre, examples/kb. Someone trying support-ask on their own manual before
writing a config would otherwise have every answer speak of Acme Cloud, without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.config import Config

SAMPLE_PRODUCT = "Acme Cloud"  # the bundled config's `product` (a test holds them together)
SAMPLE_ARTICLES = ("examples", "kb")  # the folder of the sample's help centre


def _in_sample(path: Path) -> bool:
    parts = path.resolve().parts
    return any(parts[i : i + 2] == SAMPLE_ARTICLES for i in range(len(parts) - 1))


def product_warning(config: Config, product_flag: str | None, paths: Sequence[Path]) -> str | None:
    """What to say when the product falls back to the sample's (no config file was found)
    but the articles are not the sample's: None when --product names one, a config file
    names one (whatever it is: its writer chose it), or the articles are the sample's."""
    from gateway.config import BUNDLED_SOURCE

    if product_flag is not None and product_flag.strip():
        return None
    if config.source != BUNDLED_SOURCE or config.product != SAMPLE_PRODUCT:
        return None
    if not paths or all(_in_sample(p) for p in paths):
        return None
    where = "a config of your own (`support-ask config init` writes one)"
    return (
        f'the product name is the sample\'s, "{SAMPLE_PRODUCT}", but these articles are not '
        f"the sample's: answers will name {SAMPLE_PRODUCT} as your product; set `product:` "
        f"in {where}, or pass --product NAME"
    )
