"""The scope layer: ``(context, state) → (state, ScopeOutput)`` — the hits become the numbered passages of the
context: the authority policy's order, documents deleted since the search and quarantined chunks left out,
planted instructions cut out, a cap per document, the graph's expansion, conflicts between passages marked."""

from __future__ import annotations

from dataclasses import replace

from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.scope.conflicts import find_conflicts
from ragclinic.pipeline.scope.instructions import removal_exclusion, sanitize
from ragclinic.pipeline.scope.policies import apply_authority
from ragclinic.trace.views import ScopeOutput
from ragclinic.types import AskState, Exclusion, Passage
from ragclinic.verify.instructions import detector_for


def scope(ctx: RunContext, state: AskState) -> tuple[AskState, ScopeOutput]:
    s, req = ctx.settings, state.request
    docs = ctx.kb.db.doc_infos([h.chunk.doc_id for h in state.hits])
    ranked_hits, causal_out = ctx.stage.rank(ctx, state, docs)
    hits, moved = apply_authority(ranked_hits, docs, s.authority_tag, s.authority_levels, s.authority_boost)
    passages, excluded = _passages(ctx, state, hits, docs)
    graph_out = ctx.stage.expand(ctx, state, passages)
    conflicts = find_conflicts(req.question, passages, s.conflict_top_n, judge=ctx.judge)
    marked = {c.chunk_a for c in conflicts} | {c.chunk_b for c in conflicts}
    passages = [replace(p, marks=p.marks + ("conflict",)) if p.chunk.id in marked else p for p in passages]
    out = ScopeOutput(tuple(passages), tuple(excluded), tuple(conflicts), moved, dict(req.scope_pairs),
                      state.allowed_chunks, causal_out, graph_out)
    return out.apply(state), out


def _passages(ctx: RunContext, state: AskState, hits, docs) -> tuple[list[Passage], list[Exclusion]]:
    """The first ``context_k`` hits that may enter the context, as passages; and every exclusion so far."""
    s, req = ctx.settings, state.request
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
    return passages, excluded
