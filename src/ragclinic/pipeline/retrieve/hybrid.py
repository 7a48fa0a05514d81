"""Hybrid retrieval: several retrievers' rankings fused into one.

Two fusion functions (``fusion`` setting):
- ``convex`` (default): fused(d) = Σ_r w_r · mm_r(score_r(d)), with each retriever's scores min-max
  normalised over its own candidate list and the weights summing to 1 — the convex combination that
  Bruch, Gai & Ingber (ACM TOIS 2023, "An Analysis of Fusion Functions for Hybrid Retrieval") found
  stronger than RRF; with equal weights it needs no tuning. On SciFact: 0.722 nDCG@10 vs RRF's 0.705
  (bench/RESULTS.md, "Retrieval").
- ``rrf``: fused(d) = Σ_r w_r / (rrf_k + rank_r(d)) (Cormack, Clarke & Büttcher, SIGIR 2009): ranks only,
  so indifferent to score scales and outliers.
A candidate missing from a retriever's list gets nothing from it. Ties are broken by chunk id.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence

from ragclinic.errors import ConfigError
from ragclinic.pipeline.retrieve.base import RETRIEVERS, Ranker, Retriever
from ragclinic.pipeline.retrieve.questions import learned_parts
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Hit, SourceScore

FUSIONS = ("convex", "rrf")


def fuse(rankings: Mapping[str, Sequence[tuple[Hashable, float]]], method: str, weights: Mapping[str, float],
         rrf_k: int = 60) -> dict[Hashable, float]:
    """Fused score per key from per-retriever (key, score) lists, each best first."""
    if method not in FUSIONS:
        raise ConfigError(f"unknown fusion {method!r}; valid: {', '.join(FUSIONS)}")
    fused: dict[Hashable, float] = {}
    total_w = sum(weights.get(name, 1.0) for name in rankings) or 1.0
    for name, ranked in rankings.items():
        w = weights.get(name, 1.0)
        if method == "rrf":
            for rank, (key, _) in enumerate(ranked, start=1):
                fused[key] = fused.get(key, 0.0) + w / (rrf_k + rank)
            continue
        if not ranked:
            continue
        scores = [s for _, s in ranked]
        lo, hi = min(scores), max(scores)
        for key, s in ranked:
            norm = (s - lo) / (hi - lo) if hi > lo else 1.0
            fused[key] = fused.get(key, 0.0) + (w / total_w) * norm
    return fused


def rrf(rankings: Mapping[str, Sequence[Hit]], weights: Mapping[str, float], rrf_k: int, k: int,
        method: str = "rrf") -> list[Hit]:
    """Fuse per-retriever Hit lists (each best first) into one; ties broken by chunk id for determinism."""
    fused = fuse({name: [(h.rowid, h.score) for h in hits] for name, hits in rankings.items()}, method,
                 weights, rrf_k)
    first: dict[int, Hit] = {}
    sources: dict[int, list] = {}
    for hits in rankings.values():
        for hit in hits:
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
            parts += learned_parts(kb)  # what `kb learn` wrote, once it has run (questions.py)
        if not parts:
            raise ConfigError("hybrid retrieval needs at least one retriever")
        s = kb.settings
        self.kb = kb
        self.parts, self.weights, self.rrf_k, self.depth = list(parts), s.fusion_weights, s.rrf_k, s.fusion_depth
        self.method = s.fusion

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        depth = max(k, self.depth)
        if all(isinstance(p, Ranker) for p in self.parts):
            return self._fast(query, k, depth, allowed)
        rankings = {p.name: p.retrieve(query, depth, allowed) for p in self.parts}
        return rrf(rankings, self.weights, self.rrf_k, k, self.method)

    def _fast(self, query: str, k: int, depth: int, allowed: Collection[int] | None) -> list[Hit]:
        """The same fusion over (rowid, score) lists; only the k fused winners' chunks are read."""
        rankings = {p.name: p.rank(query, depth, allowed) for p in self.parts}
        fused = fuse(rankings, self.method, self.weights, self.rrf_k)
        sources: dict[int, list[SourceScore]] = {}
        for name, ranked in rankings.items():
            for rank, (rid, score) in enumerate(ranked, start=1):
                sources.setdefault(rid, []).append(SourceScore(name, rank, score))
        ranked = sorted(fused, key=lambda r: -fused[r])
        if not ranked:
            return []
        cut = fused[ranked[min(k, len(ranked)) - 1]]
        order = [r for r in ranked if fused[r] >= cut]  # ties at the cut are broken by chunk id, as in rrf()
        chunks = self.kb.db.chunks_by_rowid(order)
        order = sorted((r for r in order if r in chunks), key=lambda r: (-fused[r], chunks[r].id))[:k]
        return [Hit(chunk=chunks[r], score=fused[r], sources=tuple(sources[r]), rowid=r) for r in order]
