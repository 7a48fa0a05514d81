"""Hybrid retrieval: reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) of several retrievers.

fused(d) = Σ_r w_r / (rrf_k + rank_r(d)) over the retrievers r that found d. Ranks, not raw scores, are
fused because BM25 and cosine scores live on unrelated scales.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ragclinic.errors import ConfigError
from ragclinic.pipeline.retrieve.base import RETRIEVERS, Ranker, Retriever
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Hit, SourceScore


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
        self.kb = kb
        self.parts, self.weights, self.rrf_k, self.depth = list(parts), s.fusion_weights, s.rrf_k, s.fusion_depth

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        depth = max(k, self.depth)
        if all(isinstance(p, Ranker) for p in self.parts):
            return self._fast(query, k, depth, allowed)
        rankings = {p.name: p.retrieve(query, depth, allowed) for p in self.parts}
        return rrf(rankings, self.weights, self.rrf_k, k)

    def _fast(self, query: str, k: int, depth: int, allowed: Collection[int] | None) -> list[Hit]:
        """The same fusion over (rowid, score) lists; only the k fused winners' chunks are read."""
        rankings = {p.name: p.rank(query, depth, allowed) for p in self.parts}
        fused: dict[int, float] = {}
        sources: dict[int, list[SourceScore]] = {}
        for name, ranked in rankings.items():
            w = self.weights.get(name, 1.0)
            for rank, (rid, score) in enumerate(ranked, start=1):
                fused[rid] = fused.get(rid, 0.0) + w / (self.rrf_k + rank)
                sources.setdefault(rid, []).append(SourceScore(name, rank, score))
        ranked = sorted(fused, key=lambda r: -fused[r])
        if not ranked:
            return []
        cut = fused[ranked[min(k, len(ranked)) - 1]]
        order = [r for r in ranked if fused[r] >= cut]  # ties at the cut are broken by chunk id, as in rrf()
        chunks = self.kb.db.chunks_by_rowid(order)
        order = sorted((r for r in order if r in chunks), key=lambda r: (-fused[r], chunks[r].id))[:k]
        return [Hit(chunk=chunks[r], score=fused[r], sources=tuple(sources[r]), rowid=r) for r in order]
