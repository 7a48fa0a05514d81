"""The Retriever role: a query → ranked Hits, optionally restricted to allowed chunk rows (pre-filter)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, runtime_checkable

from ragclinic.registry import Registry
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Hit, SourceScore


class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        """The k best hits, best first. ``allowed`` (chunk rowids) is applied inside the search."""
        ...


@runtime_checkable
class Ranker(Protocol):
    """Optional fast path: (rowid, score) best first, without loading chunks (hybrid fuses these and loads
    only the k chunks it returns)."""

    name: str

    def rank(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]: ...


RETRIEVERS: Registry[Retriever] = Registry("retriever")


def to_hits(kb: KnowledgeBase, name: str, ranked: list[tuple[int, float]]) -> list[Hit]:
    """Hits from an index's (rowid, score) list; rows deleted since the index was read are skipped."""
    chunks = kb.db.chunks_by_rowid([rid for rid, _ in ranked])
    return [Hit(chunk=chunks[rid], score=score, sources=(SourceScore(name, rank, score),), rowid=rid)
            for rank, (rid, score) in enumerate(ranked, start=1) if rid in chunks]
