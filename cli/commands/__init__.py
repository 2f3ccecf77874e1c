"""One module per command: ask, batch, config, cooldowns, eval, index, simulate, stats."""
