"""Hybrid retrieval: reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) of several retrievers.

fused(d) = Σ_r w_r / (rrf_k + rank_r(d)) over the retrievers r that found d. Ranks, not raw scores, are
fused because BM25 and cosine scores live on unrelated scales.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ragclinic.errors import ConfigError
from ragclinic.pipeline.retrieve.base import RETRIEVERS, Retriever
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Hit


def rrf(rankings: Mapping[str, Sequence[Hit]], weights: Mapping[str, float], rrf_k: int, k: int) -> list[Hit]:
    """Fuse per-retriever rankings (each best first) into one; ties broken by chunk id for determinism."""
    fused: dict[int, float] = {}
    first: dict[int, Hit] = {}
    sources: dict[int, list] = {}
    for name, hits in rankings.items():
        w = weights.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            fused[hit.rowid] = fused.get(hit.rowid, 0.0) + w / (rrf_k + rank)
            first.setdefault(hit.rowid, hit)
            sources.setdefault(hit.rowid, []).extend(hit.sources)
    order = sorted(fused, key=lambda r: (-fused[r], first[r].chunk.id))[:k]
    return [Hit(chunk=first[r].chunk, score=fused[r], sources=tuple(sources[r]), rowid=r) for r in order]


@RETRIEVERS.register("hybrid")
class HybridRetriever:
    name = "hybrid"

    def __init__(self, kb: KnowledgeBase, parts: Sequence[Retriever] | None = None) -> None:
        if parts is None:
            parts = [RETRIEVERS.create("lexical", kb)]
            if kb.embedder is not None:
                parts.append(RETRIEVERS.create("dense", kb))
        if not parts:
            raise ConfigError("hybrid retrieval needs at least one retriever")
        s = kb.settings
        self.parts, self.weights, self.rrf_k, self.depth = list(parts), s.fusion_weights, s.rrf_k, s.fusion_depth

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        depth = max(k, self.depth)
        rankings = {p.name: p.retrieve(query, depth, allowed) for p in self.parts}
        return rrf(rankings, self.weights, self.rrf_k, k)
