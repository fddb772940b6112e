"""Domain steps that ops, workers and the entrypoints share, above the store."""
