"""The query-time layers as functions ``(context, state) → (state, span outputs)``: retrieve, scope and gate here,
generate in pipeline/generate/layer.py.

Each reads only the state the previous layers produced, so the runner can restart from any layer with
a state rebuilt from a trace (or altered by the doctor or the debugger).
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

from ragclinic.pipeline.gate import decide
from ragclinic.pipeline.generate.layer import generate
from ragclinic.pipeline.gate.qtype import classify_rules
from ragclinic.pipeline.reason import causal
from ragclinic.pipeline.reason import graph_steps
from ragclinic.pipeline.reason.ambiguity import assess
from ragclinic.pipeline.reason.planner import tables_in_scope
from ragclinic.pipeline.reason.route import choose_path
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve.rerank import rerank
from ragclinic.pipeline.scope.conflicts import find_conflicts
from ragclinic.pipeline.scope.filters import resolve
from ragclinic.pipeline.scope.instructions import removal_exclusion, sanitize
from ragclinic.pipeline.scope.policies import apply_authority
from ragclinic.types import AskState
from ragclinic.trace.codec import hit_to_dict, passage_to_dict
from ragclinic.types import Exclusion, Hit, Passage
from ragclinic.verify.instructions import detector_for


def retrieve(ctx, state: AskState) -> tuple[AskState, dict[str, Any]]:
    req, s = state.request, ctx.settings
    t0 = time.perf_counter()
    res = resolve(ctx.kb.db, req.scope, newest_only=s.scope_newest_version)
    filter_ms = (time.perf_counter() - t0) * 1000
    retriever = create_retriever(ctx.kb, req.retriever)
    if req.fusion_weights and hasattr(retriever, "weights"):
        retriever.weights = dict(req.fusion_weights)
    depth = max(req.top_k, s.rerank_depth) if req.rerank else req.top_k
    queries = req.sub_questions or req.search_queries or (req.question,)
    runs = [retriever.retrieve(q, depth, res.allowed) for q in queries]
    hits = runs[0] if len(runs) == 1 else interleave(runs)
    if req.rerank and ctx.judge is not None:
        hits = rerank(ctx.judge, req.question, hits, s.rerank_depth)
    hits = hits[:req.top_k]
    excluded = tuple(Exclusion("", d, "version=latest", why) for d, why in sorted(res.excluded.items()))
    out = {"retriever": retriever.name, "queries": list(queries), "rerank": bool(req.rerank and ctx.judge is not None),
           "allowed_chunks": None if res.allowed is None else len(res.allowed), "scope_filter_ms": round(filter_ms, 3),
           "hits": [hit_to_dict(h) for h in hits], "excluded": [asdict(e) for e in excluded]}
    return replace(state, hits=tuple(hits), allowed_chunks=out["allowed_chunks"], excluded=excluded), out


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


def scope(ctx, state: AskState) -> tuple[AskState, dict[str, Any]]:
    s, req = ctx.settings, state.request
    docs = ctx.kb.db.doc_infos([h.chunk.doc_id for h in state.hits])
    ranked_hits, causal_out = state.hits, None
    if classify_rules(req.question)[0] == "causal" and causal.enabled(ctx.kb):
        ranked_hits, causal_out = causal.rank(ctx.kb, req.question, state.hits, s.causal_weights, docs,
                                              admit=graph_steps.admission(ctx, state))
    hits, moved = apply_authority(ranked_hits, docs, s.authority_tag, s.authority_levels, s.authority_boost)
    passages, excluded, per_doc = [], list(state.excluded), {}
    for h in hits:
        if len(passages) >= req.context_k:
            break
        doc = docs.get(h.chunk.doc_id)
        if doc is None:  # deleted since the search: never cite what is gone
            continue
        if any(doc.tags.get(k) != v for k, v in req.enforced):  # the retrieve pre-filter applied it; twice is safer
            continue
        if h.chunk.id in req.quarantine:
            excluded.append(Exclusion(h.chunk.id, h.chunk.doc_id, "quarantine",
                                      "the passage addresses the model (injected instruction)"))
            continue
        if s.strip_instructions:
            h, removal = sanitize(ctx.kb.db.conn, h, doc, detector_for(s.instruction_detector))
            if removal is not None:
                excluded.append(removal_exclusion(removal))
            if h is None:
                continue
        if req.max_per_doc and per_doc.get(h.chunk.doc_id, 0) >= req.max_per_doc:
            continue
        per_doc[h.chunk.doc_id] = per_doc.get(h.chunk.doc_id, 0) + 1
        level = doc.tags.get(s.authority_tag)
        passages.append(Passage(len(passages) + 1, h, doc, marks=(f"authority={level}",) if level else ()))
    graph_out = graph_steps.expand_passages(ctx, state, passages)
    conflicts = find_conflicts(state.request.question, passages, s.conflict_top_n, judge=ctx.judge)
    marked = {c.chunk_a for c in conflicts} | {c.chunk_b for c in conflicts}
    passages = [replace(p, marks=p.marks + ("conflict",)) if p.chunk.id in marked else p for p in passages]
    out = {"passages": [passage_to_dict(p) for p in passages], "reordered_by_authority": moved,
           "excluded": [asdict(e) for e in excluded], "conflicts": [asdict(c) for c in conflicts],
           "filters": dict(req.scope_pairs), "allowed_chunks": state.allowed_chunks}
    if causal_out is not None:
        out["causal_ranking"] = causal_out
    if graph_out is not None:
        out["graph"] = graph_out
    return replace(state, passages=tuple(passages), conflicts=tuple(conflicts), excluded=tuple(excluded)), out


def gate(ctx, state: AskState) -> tuple[AskState, dict[str, Any]]:
    decision, scored = decide(state.request.question, state.passages, ctx.settings, ctx.judge, ctx.lm)
    decision, tables = _path(ctx, state, decision, scored)
    amb = assess(state.request.question, scored, ctx.settings.ambiguity_threshold)
    decision, scored, graph_out = graph_steps.global_step(ctx, state, decision, scored)
    out = {"decision": asdict(decision), "supports": {p.n: round(p.support, 4) for p in scored},
           "support_by": sorted({p.support_by for p in scored}), "passages": [passage_to_dict(p) for p in scored],
           "ambiguity": {**amb.to_json(), "original_question": state.request.original or state.request.question}}
    if tables:
        out["tables"] = [t["name"] for t in tables]
    out["graph"] = graph_out
    return replace(state, decision=decision, passages=tuple(scored)), out


def _path(ctx, state: AskState, decision, scored):
    """The reasoning path (pipeline/reason/route.py): tools for arithmetic and table questions when a model can
    plan. A table question the passages' words do not reach (a number spread over rows) is answered by the tools
    even when the evidence score alone would refuse it."""
    if not ctx.settings.tools_path or ctx.lm is None or decision.route == "clarify" or not state.passages:
        return decision, []
    tables = tables_in_scope(ctx.kb, scored, state.request.question)
    path, why = choose_path(state.request.question, scored, tables)
    if path == "direct" or (decision.route == "refuse" and not tables):
        return decision, tables
    route = "answer" if tables else decision.route
    reason = decision.reason if decision.route == "answer" else f"{decision.reason}; the tables may answer it"
    return replace(decision, route=route, reason=reason, path=path, path_why=why), tables


LAYER_FUNCS = {"retrieve": retrieve, "scope": scope, "gate": gate, "generate": generate}
