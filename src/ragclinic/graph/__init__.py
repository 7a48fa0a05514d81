"""The knowledge graph (issue 20, GraphRAG-lite): extraction, communities and their summaries, sync with the chunks."""
