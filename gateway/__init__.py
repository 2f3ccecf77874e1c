"""support-ask's fallback engine: importable, with no CLI or terminal code."""
