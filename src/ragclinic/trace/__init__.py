"""The query trace: one span per layer, every model call, the final answer — persisted, replayable."""
