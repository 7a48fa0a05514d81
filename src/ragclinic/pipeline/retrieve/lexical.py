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

    def rank(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        tokens = analyze(query, self.kb.settings.lexical_stem)
        return self.kb.lexical_current().search(tokens, k, None if allowed is None else list(allowed))

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        return to_hits(self.kb, self.name, self.rank(query, k, allowed))
