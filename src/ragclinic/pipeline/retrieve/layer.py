"""The retrieve layer: ``(context, state) → (state, RetrieveOutput)`` — the scope resolved to a pre-filter, the
search (each of the treatment's queries, or the question and its translation into the documents' language
(crosslingual.py), merged by turns), the optional rerank."""

from __future__ import annotations

import time
from dataclasses import replace

from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.retrieve.base import RETRIEVERS
from ragclinic.pipeline.retrieve.crosslingual import queries_for
from ragclinic.pipeline.retrieve.rerank import rerank
from ragclinic.pipeline.retrieve.filters import resolve
from ragclinic.trace.views import RetrieveOutput
from ragclinic.types import AskState, Exclusion, Hit


def retrieve(ctx: RunContext, state: AskState) -> tuple[AskState, RetrieveOutput]:
    req, s = state.request, ctx.settings
    t0 = time.perf_counter()
    res = resolve(ctx.kb.db, req.scope, newest_only=s.scope_newest_version)
    filter_ms = (time.perf_counter() - t0) * 1000
    retriever = ctx.retriever
    if retriever is None or req.fusion_weights:  # a treatment's weights: a retriever of its own, not the shared one
        retriever = RETRIEVERS.create(req.retriever, ctx.kb)
    if req.fusion_weights and hasattr(retriever, "weights"):
        retriever.weights = dict(req.fusion_weights)
    depth = max(req.top_k, s.rerank_depth) if req.rerank else req.top_k
    queries = req.sub_questions or req.search_queries or queries_for(ctx, req.question)
    runs = [retriever.retrieve(q, depth, res.allowed) for q in queries]
    hits = runs[0] if len(runs) == 1 else interleave(runs)
    if req.rerank and ctx.judge is not None:
        hits = rerank(ctx.judge, req.question, hits, s.rerank_depth)
    hits = tuple(hits[:req.top_k])
    excluded = tuple(Exclusion("", d, "version=latest", why) for d, why in sorted(res.excluded.items()))
    out = RetrieveOutput(hits, retriever.name, tuple(queries), bool(req.rerank and ctx.judge is not None),
                         None if res.allowed is None else len(res.allowed), round(filter_ms, 3), excluded)
    return out.apply(state), out


def interleave(runs: list[list[Hit]]) -> list[Hit]:
    """Hits of several searches merged by turns (each search's best first, duplicates once): every query
    keeps its best hits near the top. Scores are rank-based, since the searches' scores do not compare."""
    merged: dict[str, Hit] = {}
    for rank in range(max(map(len, runs), default=0)):
        for run in runs:
            if rank < len(run) and run[rank].chunk.id not in merged:
                merged[run[rank].chunk.id] = run[rank]
    n = len(merged)
    return [replace(h, score=round(1.0 - i / (n + 1), 6)) for i, h in enumerate(merged.values())]
