"""BM25 over the knowledge base's tantivy index; queries go through the same analyzer as chunks."""

from __future__ import annotations

from collections.abc import Collection

from ragclinic.pipeline.retrieve.base import RETRIEVERS, to_hits
from ragclinic.store.kb import KnowledgeBase
from ragclinic.text.analyzer import analyze
from ragclinic.types import Hit


@RETRIEVERS.register("lexical")
class LexicalRetriever:
    name = "lexical"

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        tokens = analyze(query, self.kb.settings.lexical_stem)
        ranked = self.kb.lexical().search(tokens, k, None if allowed is None else list(allowed))
        return to_hits(self.kb, self.name, ranked)
