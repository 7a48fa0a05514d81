"""A retriever for tests: every chunk scored by the share of the query's content terms it holds (no index).

Not registered (users are not offered it); exact and dependency-free, so a test's ranking is known in advance.
Reads every chunk per query: for small test knowledge bases only.
"""

from __future__ import annotations

from collections.abc import Collection

from ragclinic.pipeline.retrieve.base import to_hits
from ragclinic.store.kb import KnowledgeBase
from ragclinic.text.support import coverage
from ragclinic.types import Hit


class FakeRetriever:
    name = "fake"

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        scored = [(rid, round(coverage(query, text), 6)) for rid, text in self.kb.db.iter_chunk_texts()
                  if allowed is None or rid in allowed]
        ranked = sorted((x for x in scored if x[1] > 0), key=lambda x: (-x[1], x[0]))[:k]
        return to_hits(self.kb, self.name, ranked)
