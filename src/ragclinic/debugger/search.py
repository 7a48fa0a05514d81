"""The search-side probes. retrieve: where does each retriever rank the gold chunk, against the top-k cut,
and why did it miss (terms the chunk lacks, low embedding similarity, a chunk too short to carry meaning)?
scope: would the gold chunk pass the filters and policies used, and if it was retrieved, what kept it out
of the context?"""

from __future__ import annotations

from dataclasses import replace

from ragclinic.debugger.base import Case, Fix, LayerReport, fault, not_reached, ok
from ragclinic.types import AskState
from ragclinic.pipeline.retrieve import resolve_scope as resolve
from ragclinic.types import Scope
from ragclinic.text.support import content_terms

DEPTH = 100  # how deep each retriever is searched for the gold chunk
SHORT_CHUNK = 12  # tokens: below this a chunk rarely carries enough meaning to be found


def _ranks(case: Case) -> dict[str, int | None]:
    """Each retriever's 1-based rank of the best gold chunk over the whole knowledge base (no scope filter, no
    version policy), by the retrieve layer itself."""
    gold = case.gold_ids()
    question = replace(case.request, scope=Scope(), scope_pairs=(), top_k=DEPTH, rerank=False, search_queries=(),
                       sub_questions=(), fusion_weights=())
    out: dict[str, int | None] = {}
    for name in ("lexical", "dense", "hybrid"):
        if name != "lexical" and case.kb.embedder is None:
            continue
        state, _ = case.pipeline.run_layer("retrieve", AskState(replace(question, retriever=name)),
                                           scope_newest_version=False)
        out[name] = next((i for i, h in enumerate(state.hits, start=1) if h.chunk.id in gold), None)
    return out


def _allowed(case: Case) -> tuple[bool, str]:
    """Whether the request's scope admits a gold document, and if not, the rule that excludes it."""
    scope = case.request.scope
    res = resolve(case.kb.db, scope, newest_only=case.kb.settings.scope_newest_version)
    gold_rows = {r for r, _ in case.gold_chunks}
    if res.allowed is None or gold_rows & res.allowed:
        return True, ""
    d = next((d for d in case.gold_docs if d["doc_id"] in {c.doc_id for _, c in case.gold_chunks}), None)
    if d is None:
        return False, "outside the scope"
    for key, value in dict(case.trace.scope).items():
        if not Scope.parse({key: value}).matches(d["doc_id"], d["path"], d["record_key"], d["mtime"], d["tags"]):
            has = d["tags"].get(key)
            return False, f"--scope {key}={value}" + (f" (the document has {key}={has})" if has is not None else
                                                       " (the document does not match)")
    why = res.excluded.get(d["doc_id"])
    return False, f"version=latest: {why}" if why else "the scope policies"


def probe_retrieve(case: Case) -> LayerReport:
    if not case.gold_chunks:
        if case.expect.expect_refusal:
            return ok("nothing should be retrieved: the question should be refused")
        return not_reached("no gold chunk to look for")
    hits = case.hits()
    gold = case.gold_ids()
    top_k = case.request.top_k
    rank = next((i for i, h in enumerate(hits, start=1) if h.chunk.id in gold), None)
    if rank is not None and (missed := _missed_parts(case)):
        return missed
    if rank is not None:
        return ok(f"the gold chunk was retrieved at rank {rank} of {top_k}", rank=rank, top_k=top_k)
    allowed, rule = _allowed(case)
    ranks = _ranks(case)
    if not allowed:
        return ok(f"the gold chunk was outside the scope ({rule}), so no retriever could return it (see scope)",
                  ranks_unfiltered=ranks)
    used = case.request.retriever
    reasons = _miss_reasons(case, ranks)
    return fault(_miss_summary(ranks, used, top_k), _miss_fix(ranks, reasons, used, top_k),
                 *_miss_fixes(case, ranks, reasons, used), ranks=ranks, top_k=top_k, retriever=used, reasons=reasons)


def _missed_parts(case: Case) -> LayerReport | None:
    """A fault when the expected answer has parts said in several chunks (a summary over documents) and the search
    found some of them but not all: the answer could state only what it was given. Where the run's retriever ranks
    each missed chunk for the question says how deep a search would have found it."""
    chunks = {s.chunk.id for s in case.said}
    if len(chunks) < 2:
        return None
    reached = {h.chunk.id for h in case.hits()} | {p.chunk.id for p in case.passages()} | _collected(case)
    missed = [s for s in case.said if s.chunk.id not in reached]
    if not missed:
        return None
    req = case.request
    question = replace(req, scope=Scope(), scope_pairs=(), top_k=DEPTH, rerank=False, search_queries=(),
                       sub_questions=(), fusion_weights=())
    state, _ = case.pipeline.run_layer("retrieve", AskState(question), scope_newest_version=False)
    ranks = {h.chunk.id: i for i, h in enumerate(state.hits, start=1)}
    parts = [{"part": s.part, "doc_id": s.chunk.doc_id, "chunk": s.chunk.ordinal, "rank": ranks.get(s.chunk.id)}
             for s in missed]
    shown = "; ".join(f"'{p['part']}' (rank {p['rank'] or f'>{DEPTH}'})" for p in parts)
    deepest = max((p["rank"] for p in parts if p["rank"]), default=None)
    fixes = []
    if deepest is not None:
        keep = min(50, max(req.context_k, deepest))
        fixes.append(Fix(f"retrieve the top {deepest} (top_k) and keep {keep} (context_k)",
                         settings={"top_k": deepest, "context_k": keep}, request={"top_k": deepest, "context_k": keep}))
    if not req.rerank:
        fixes.append(Fix("rerank a deeper search with the judge", settings={"rerank": True}, request={"rerank": True}))
    n = len({s.part for s in case.said})
    how = f"raise top_k to {deepest}" if deepest else "ask for each part in its own words"
    return fault(f"the search missed the chunks of {len(missed)} of {n} parts of the expected answer: {shown}",
                 f"the answer needs {n} chunks and the search ({req.retriever}, top_k {req.top_k}) found "
                 f"{n - len(missed)}: {how}, or enable rerank", *fixes, missed_parts=parts, top_k=req.top_k,
                 retriever=req.retriever)


def _collected(case: Case) -> set[str]:
    """Chunks a question answered over the graph's communities or documents gathered besides the search's hits."""
    span = case.trace.span("gate")
    graph = (span.output.graph if span is not None and span.output is not None else None) or {}
    return set((graph.get("collection") or {}).get("chunks") or ())


def _miss_summary(ranks: dict[str, int | None], used: str, top_k: int) -> str:
    shown = ", ".join(f"{n} {r if r else f'>{DEPTH}'}" for n, r in ranks.items())
    return f"the gold chunk is not in the top {top_k} of {used} (ranks: {shown})"


def _miss_reasons(case: Case, ranks: dict[str, int | None]) -> list[str]:
    chunk = case.gold_chunks[0][1]
    q_terms = content_terms(case.trace.query)
    missing = sorted(q_terms - content_terms(chunk.text))
    reasons = []
    if q_terms and len(missing) >= max(1, len(q_terms) / 2):
        reasons.append("term mismatch: the chunk lacks " + ", ".join(missing[:6]))
    if "dense" in ranks and (ranks["dense"] is None or ranks["dense"] > 20):
        reasons.append("low embedding similarity")
    if chunk.tokens < SHORT_CHUNK:
        reasons.append(f"chunk too short to carry meaning ({chunk.tokens} tokens)")
    return reasons or ["outranked by other chunks"]


def _miss_fix(ranks: dict[str, int | None], reasons: list[str], used: str, top_k: int) -> str:
    found = {n: r for n, r in ranks.items() if r is not None}
    shown = ", ".join(f"{r} by {n}" for n, r in found.items()) or f"not in the top {DEPTH} of any retriever"
    better = [n for n, r in found.items() if r <= top_k and n != used]
    if better:
        return f"gold chunk ranked {shown}: retrieve with {better[0]} (--retriever / settings retriever)"
    if any(r.startswith("term mismatch") for r in reasons):
        return (f"gold chunk ranked {shown}: term mismatch ({reasons[0].split('lacks ')[1]}), enable expansion "
                "(the doctor's expand_terms) or ask in the document's own words")
    if any(r.startswith("chunk too short") for r in reasons):
        return f"gold chunk ranked {shown}: the chunk is too short to be found; raise chunk_min_tokens and re-ingest"
    best = min(found.values(), default=None)
    if best is not None and best <= top_k:
        return (f"gold chunk ranked {shown} for the question itself, but the run's search (rerank or rewritten "
                "queries) dropped it: check the rerank judge or the rewrite")
    if best is not None:
        return f"gold chunk ranked {shown}: raise top_k to at least {best} or enable rerank"
    return f"gold chunk {shown}: rewrite the question with the document's terms or enable query expansion"


def _miss_fixes(case: Case, ranks: dict[str, int | None], reasons: list[str], used: str) -> tuple[Fix, ...]:
    """What `diagnose --apply` tries for a miss, in order: a retriever that ranks it within top_k; a deeper search
    whose passages all reach the context; a rerank of a deeper search; longer chunks where the chunk is too short."""
    req = case.request
    found = {n: r for n, r in ranks.items() if r is not None}
    fixes = [Fix(f"retrieve with {n}", settings={"retriever": n}, request={"retriever": n})
             for n, r in sorted(found.items(), key=lambda x: x[1]) if n != used and r <= req.top_k][:1]
    best = found.get(used) or min(found.values(), default=None)
    if best is not None and best > req.top_k:
        keep = min(50, max(req.context_k, best))  # context_k's limit
        fixes.append(Fix(f"retrieve the top {best} (top_k) and keep {keep} (context_k)",
                         settings={"top_k": best, "context_k": keep}, request={"top_k": best, "context_k": keep}))
    if best is not None and not req.rerank:
        fixes.append(Fix("rerank a deeper search with the judge", settings={"rerank": True}, request={"rerank": True}))
    if any(r.startswith("chunk too short") for r in reasons):
        s = case.kb.settings  # pieces under chunk_min_tokens join their neighbours: a larger minimum, longer chunks
        floor = min(s.chunk_max_tokens - 1, max(2 * s.chunk_min_tokens, type(s).model_fields["chunk_min_tokens"].default))
        if floor > s.chunk_min_tokens:
            fixes.append(Fix(f"re-chunk with chunk_min_tokens {floor}", kb_settings={"chunk_min_tokens": floor}))
    return tuple(fixes)


def probe_scope(case: Case) -> LayerReport:
    if not case.gold_chunks:
        if case.expect.expect_refusal:
            return ok("nothing should reach the context: the question should be refused")
        return not_reached("no gold chunk to look for")
    allowed, rule = _allowed(case)
    if not allowed:
        return fault(f"the gold document is excluded by scope rule {rule}",
                     f"excluded by scope rule {rule}: widen or drop that filter, or retag the document",
                     *_scope_fixes(case, rule), rule=rule)
    gold = case.gold_ids()
    passages = case.passages()
    if any(p.chunk.id in gold for p in passages):
        n = next(p.n for p in passages if p.chunk.id in gold)
        return ok(f"the gold chunk reached the context as passage [{n}]", passage=n)
    hits = case.hits()
    rank = next((i for i, h in enumerate(hits, start=1) if h.chunk.id in gold), None)
    if rank is None:
        return ok("the gold chunk would pass the filters and policies used (it was not retrieved)")
    return _dropped(case, rank, gold)


def _scope_fixes(case: Case, rule: str) -> tuple[Fix, ...]:
    """For a filter that excludes the gold document: the document tagged to match it (its tag may be wrong), then
    the question asked without that filter; for the version rule, every version searched."""
    if rule.startswith("version=latest"):
        return (Fix("search every version (scope_newest_version off)", settings={"scope_newest_version": False}),)
    d = next((d for d in case.gold_docs if d["doc_id"] in {c.doc_id for _, c in case.gold_chunks}), None)
    pairs = dict(case.trace.scope)
    for key, value in pairs.items():
        if d is not None and not Scope.parse({key: value}).matches(d["doc_id"], d["path"], d["record_key"],
                                                                  d["mtime"], d["tags"]):
            fixes = []
            if key not in ("from", "to", "path", "doc", "tenant") and key not in dict(case.request.enforced):
                # a tag, not a date or a path — and never a tenant's: a retag would hand one tenant's document
                # to another
                fixes.append(Fix(f"tag {d['path']} {key}={value}", retag={d["doc_id"]: {**d["tags"], key: value}}))
            rest = {k: v for k, v in pairs.items() if k != key}
            fixes.append(Fix(f"ask without --scope {key}={value}", request={"scope": rest}))
            return tuple(fixes)
    return ()


def _dropped(case: Case, rank: int, gold: set[str]) -> LayerReport:
    after = case.state_after("scope") if case.trace.span("scope") else None
    for e in after.excluded if after else ():
        if e.chunk_id in gold:
            return fault(f"the gold chunk was excluded by {e.rule}: {e.reason}",
                         f"excluded by scope rule {e.rule}: {e.reason}", rule=e.rule)
    k, cap = case.request.context_k, case.request.max_per_doc
    gold_docs = {c.doc_id for _, c in case.gold_chunks}
    if cap and sum(p.chunk.doc_id in gold_docs for p in case.passages()) >= cap:
        return fault(f"the gold chunk (rank {rank}) was dropped by the per-document cap {cap}",
                     "raise or remove the per-document cap (max_per_doc)",
                     Fix("no per-document cap", request={"max_per_doc": 0}), rank=rank)
    if rank <= k:
        moved = case.trace.span("scope").output.reordered_by_authority if after else None
        return fault(f"the gold chunk was retrieved at rank {rank} but left out of the context"
                     + (" after authority reordering" if moved else " (its document may have been deleted)"),
                     "check the authority policy (authority_tag / authority_boost) or re-ingest the document",
                     Fix("no authority boost", settings={"authority_boost": 0.0}), rank=rank, context_k=k)
    return fault(f"the gold chunk was retrieved at rank {rank} but only {k} passages reach the context",
                 f"gold chunk ranked {rank} > context_k {k}: raise context_k to {rank} or enable rerank",
                 Fix(f"keep {min(50, rank)} passages (context_k)", settings={"context_k": min(50, rank)},
                     request={"context_k": min(50, rank)}),
                 Fix("rerank with the judge", settings={"rerank": True}, request={"rerank": True}),
                 rank=rank, context_k=k)
