"""The one wiring module: builds the parts (knowledge base, embedder, vector index, language model, judge, generator)."""
