"""One module per figure or table; each exposes a frozen config and `run(cfg) -> results`."""
