"""Dense retrieval: the KB's embedder on the query side (through the KB's query adapter when `kb learn` kept one:
learn/adapter.py fits it, store/query_adapter.py reads it), exact or HNSW search over chunk vectors."""

from __future__ import annotations

from collections.abc import Collection

from ragclinic.errors import ConfigError
from ragclinic.store.query_adapter import adapt
from ragclinic.pipeline.retrieve.base import RETRIEVERS, to_hits
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Hit


@RETRIEVERS.register("dense")
class DenseRetriever:
    name = "dense"

    def __init__(self, kb: KnowledgeBase) -> None:
        if kb.embedder is None:
            raise ConfigError(f"knowledge base {kb.folder} has no vectors (embedder='none'); "
                              f"use the lexical retriever, or ingest into a new --kb with --embedder e5")
        self.kb = kb

    def rank(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        vector = adapt(self.kb, self.kb.embedder.embed_queries([query])[0])  # the KB's own adapter, if kept
        return self.kb.dense().search(vector, k, allowed)

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        return to_hits(self.kb, self.name, self.rank(query, k, allowed))
