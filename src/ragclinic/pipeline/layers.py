"""The four query-time layers as functions ``(context, state) → (state, span outputs)``.

Each reads only the state the previous layers produced, so the runner can restart from any layer with
a state rebuilt from a trace (or altered by the doctor or the debugger).
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

from ragclinic.pipeline.gate import decide
from ragclinic.pipeline.generate import GenerateInput, check_claims, violations
from ragclinic.pipeline.generate.select import select_context
from ragclinic.pipeline.generate.base import Draft
from ragclinic.pipeline.generate.citations import check_items, declines
from ragclinic.pipeline.generate.structured import Item, Reply
from ragclinic.pipeline.generate.structured import render as render_reply
from ragclinic.text.lang import language_of
from ragclinic.pipeline.generate.constraint_check import broken_constraints, matching_passages
from ragclinic.pipeline.generate.constraint_check import refusal_reason as constraint_refusal
from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.gate.qtype import classify_rules
from ragclinic.pipeline.reason import causal
from ragclinic.pipeline.reason import graph_steps
from ragclinic.pipeline.reason.graph import point_excerpt
from ragclinic.pipeline.reason.ambiguity import assess
from ragclinic.pipeline.reason.planner import answer_with_tools, tables_in_scope
from ragclinic.pipeline.reason.route import choose_path
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve.rerank import rerank
from ragclinic.pipeline.scope.conflicts import find_conflicts
from ragclinic.pipeline.scope.filters import resolve
from ragclinic.pipeline.scope.instructions import removal_exclusion, removal_places, sanitize
from ragclinic.pipeline.scope.policies import apply_authority
from ragclinic.pipeline.state import AskState
from ragclinic.trace.codec import hit_to_dict, passage_to_dict
from ragclinic.types import Answer, Citation, Exclusion, Hit, Passage
from ragclinic.verify import cheap
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


def generate(ctx, state: AskState) -> tuple[AskState, dict[str, Any]]:
    shown = _Shown(ctx.on_token)
    if ctx.on_token is not None:
        ctx = replace(ctx, on_token=shown)
    q, d, s = state.request.question, state.decision, ctx.settings
    flags: list[str] = list(ctx.flags)
    drafts: list[Draft] = []
    passages = state.passages
    tooled = _tools(ctx, state, flags) if d.route == "answer" and d.path == "tools" and state.draft is None else None
    if tooled is not None and tooled.text:
        return _tools_answer(ctx, state, tooled, flags)
    if d.route == "answer":
        text, generator = _drafted(ctx, state, passages, flags, drafts)
    else:
        text = d.clarifying_question if d.route == "clarify" else _refusal(q, d)
        generator = "template"
        if ctx.on_token:
            ctx.on_token(text)
    claims, text = _claims(ctx, state, drafts, text, passages) if d.route == "answer" else ([], text)
    route, unbacked = d.route, {}
    if route == "answer" and _unbacked(claims, ctx.judge):
        text, generator, route, claims, unbacked = _retry_unsupported(ctx, state, text, generator, claims, drafts,
                                                                       flags)
    if route == "answer" and not claims and _declined(drafts, text):
        text, generator, route, claims, declined = _retry_declined(ctx, state, text, generator, drafts, flags)
        unbacked = declined or unbacked
    if route == "answer" and (broken := broken_constraints(q, claims, passages)):
        text, generator, route, claims = _constraint_retry(ctx, state, broken, drafts, flags)
    if route == "answer" and d.question_type == "causal":
        text, claims = _causal_direction(ctx, state, text, claims, flags)
    if route == "answer" and d.path in ("global", "mixed") and generator != "extractive":
        text, claims = graph_steps.with_points(ctx, state, text, claims, flags)
    shown.close(text, drafts)
    flags += [f"instruction_removed: {where}" for where in removal_places(state.excluded)]
    flags += [f"violation: {v}" for v in violations(text)]
    flags += [f"invalid_citation: {c.text[:60]}" for c in claims if c.verdict == "invalid_citation"]
    flags += [f"unsupported_citation: {c.text[:60]}" for c in claims if c.verdict in ("unsupported", "contradicted")]
    cited = sorted({n for c in claims for n in c.cited if c.verdict != "invalid_citation"})
    by_n = {p.n: p for p in state.passages}
    citations = tuple(Citation(n, by_n[n].chunk.id, by_n[n].chunk.doc_id, by_n[n].chunk.text, by_n[n].doc.path,
                               by_n[n].doc.title) for n in cited if n in by_n)
    chain, notes = None, []
    if route == "answer" and d.question_type == "causal" and causal.enabled(ctx.kb):
        text, chain, citations, notes = _with_chain(ctx, state, text, citations, by_n)
    answer = Answer(text, route, d.question_type, route == "refuse", citations, tuple(claims),
                    _confidence(d, claims, route), generator, tuple(flags),
                    plan=tuple(tooled.plan) if tooled else (), tools=tuple(tooled.tools) if tooled else (),
                    causal_chain=tuple(chain.links) if chain else (),
                    evidence_strength=chain.strength if chain else "", notes=tuple(notes))
    if unbacked and len(drafts) > 1:
        unbacked["drafts"] = [x.text for x in drafts]  # every model draft, the retry's included
    out = {"answer": answer.to_json(), "prompt_tokens": sum(x.prompt_tokens for x in drafts),
           "completion_tokens": sum(x.completion_tokens for x in drafts)}
    if d.route == "answer" and (shown := _selection(ctx, state, passages)) is not None:
        out["context"] = shown.to_json()  # what the generator was shown (the gate's span has the passages whole)
    if unbacked:
        out["unsupported_draft"] = unbacked
    return replace(state, answer=answer), out


class _Shown:
    """What the user has been shown of this layer's answer as it streamed; ``close`` completes it so that the stream
    ends with the final text: the rest of it (the citation marks) when the last draft's streamed text is its
    start, else the final text on a line of its own — unless the stream already ends with it."""

    def __init__(self, on_token) -> None:
        self.on_token, self.text = on_token, ""

    def __call__(self, piece: str) -> None:
        self.text += piece
        self.on_token(piece)

    def close(self, final: str, drafts: list[Draft]) -> None:
        if self.on_token is None or not final or self.text.rstrip().endswith(final.strip()):
            return
        streamed = drafts[-1].streamed if drafts and drafts[-1].items is not None else ""
        if streamed and self.text.endswith(streamed) and final.startswith(streamed):
            self(final[len(streamed):])
        elif not streamed and not self.text.strip():
            self(final)
        else:
            self("\n" + final)


_CHAIN_NOTE = {
    ("en", "none"): "The documents state no causal link for this; the related facts are in {cites}.",
    ("zh", "none"): "文档没有说明其中的因果关系；相关内容见{cites}。",
    ("en", "limited"): "Evidence: limited ({why}).", ("zh", "limited"): "证据有限（{why}）。",
    ("en", "conflicting"): "Evidence: conflicting ({why}).", ("zh", "conflicting"): "证据相互矛盾（{why}）。",
}


def _causal_direction(ctx, state: AskState, text: str, claims, flags: list[str]):
    """A sentence of the answer that states a passage's cause → effect link backwards is replaced by the passage's
    own sentence, cited (reason/causal.py ``fix_direction``); the claims are checked again on the new text."""
    n_of = {p.chunk.id: p.n for p in state.passages}
    new, fixed = causal.fix_direction(text, causal.passage_links(ctx.kb, state.passages), n_of)
    if not fixed:
        return text, claims
    flags += [f"causal_direction_fixed: {f['said'].strip()[:60]}" for f in fixed]
    return new, check_claims(new, state.passages, ctx.judge, ctx.settings, state.request.question)


def _with_chain(ctx, state: AskState, text: str, citations, by_n):
    """A causal answer states the chain the passages give, cited; the evidence's strength, when not strong, is a note
    beside it (text, chain, citations, notes)."""
    lang = "zh" if language_of(state.request.question) == "zh" else "en"
    n_of = {p.chunk.id: p.n for p in state.passages}
    chain = causal.chain_for(ctx.kb, state.request.question, list(n_of))
    cites = "".join(f"[{n_of[c]}]" for c in chain.chunk_ids() if c in n_of)
    if chain.links:
        text = f"{text}\n{'因果链' if lang == 'zh' else 'Chain'}: {chain.text()} {cites}"
    related = "".join(f"[{c.n}]" for c in citations) or "".join(f"[{p.n}]" for p in state.passages[:2])
    notes = []
    if (lang, chain.strength) in _CHAIN_NOTE:
        notes.append(_CHAIN_NOTE[(lang, chain.strength)].format(why=chain.why, cites=related))
    have = {c.n for c in citations}
    extra = tuple(Citation(n, by_n[n].chunk.id, by_n[n].chunk.doc_id, by_n[n].chunk.text, by_n[n].doc.path,
                           by_n[n].doc.title) for n in sorted({n_of[c] for c in chain.chunk_ids()} - have))
    return text, chain, tuple(sorted(citations + extra, key=lambda c: c.n)), notes


def _tools(ctx, state: AskState, flags: list[str]):
    tables = tables_in_scope(ctx.kb, state.passages, state.request.question)
    tooled = answer_with_tools(ctx, state, tables, ctx.settings.tools_max_calls)
    flags += tooled.flags
    return tooled


def _tools_answer(ctx, state: AskState, tooled, flags: list[str]) -> tuple[AskState, dict[str, Any]]:
    """The answer written from the tool outputs (planner.py checked its numbers and cited its sources)."""
    d = state.decision
    if ctx.on_token:
        ctx.on_token(tooled.text)
    by_n = {p.n: p for p in tooled.passages}
    cited = sorted({n for c in tooled.claims for n in c.cited if n in by_n})
    citations = tuple(Citation(n, by_n[n].chunk.id, by_n[n].chunk.doc_id, by_n[n].chunk.text, by_n[n].doc.path,
                               by_n[n].doc.title) for n in cited)
    ok = sum(c.verdict == "supported" for c in tooled.claims) / max(1, len(tooled.claims))
    answer = Answer(tooled.text, "answer", d.question_type, False, citations, tuple(tooled.claims),
                    max(0.0, min(1.0, 0.5 + 0.5 * ok)), getattr(ctx.lm, "model_id", "llm"), tuple(flags),
                    plan=tuple(tooled.plan), tools=tuple(tooled.tools))
    out = {"answer": answer.to_json(), "prompt_tokens": tooled.prompt_tokens,
           "completion_tokens": tooled.completion_tokens, "plan": tooled.plan, "tools": tooled.tools,
           "passages": [passage_to_dict(p) for p in tooled.passages]}
    return replace(state, answer=answer, passages=tuple(tooled.passages)), out


def _retry_unsupported(ctx, state: AskState, text: str, generator: str, claims, drafts: list[Draft],
                       flags: list[str]):
    """Answer-then-verify: the verifier finds none of the answer's claims in the passages — the model answered
    from a passage that does not say it (same topic, another event) or from memory. Answer once more from the
    passages the verifier found sufficient (not the ones that answer cited); else say so, do not guess.
    (text, generator, route, claims, the withdrawn draft)."""
    q = state.request.question
    best = max(c.score for c in claims)
    unbacked = {"text": text, "claims": [asdict(c) for c in claims]}
    note = f"no passage states the model's answer (best support P={best:.2f}, {ctx.judge.model_id})"
    retry = _verified_passages(ctx, state, claims) if state.draft is None else ()
    again = _again(ctx, state, retry, drafts, 0, "not in the documents") if retry else None
    if again:
        text, generator, claims, extra = again
        flags += extra + [f"answer_regenerated: {note}; answered again from passage(s) "
                          f"{', '.join(f'[{p.n}]' for p in retry)}"]
        return text, generator, "answer", claims, unbacked
    text = render("no_evidence", q)
    flags.append(f"answer_unsupported: {note}; refused")
    if ctx.on_token:  # the draft was streamed: the user must see that it was withdrawn
        ctx.on_token(f"\n[not in the documents: the answer above is withdrawn]\n{text}")
    return text, "template", "refuse", [], unbacked


def _constraint_retry(ctx, state: AskState, broken, drafts: list[Draft], flags: list[str]):
    """The answer breaks a year or ordinal the question asks about (generate/constraint_check.py): answer again from
    the passages that have the asked value, else refuse and say which value the documents give.
    (text, generator, route, claims)."""
    q = state.request.question
    note = "; ".join(dict.fromkeys(b.describe() for b in broken))
    good = matching_passages(q, state.passages, broken) if state.draft is None else ()
    again = _again(ctx, state, good, drafts, 0, "the question asks about another year") if good else None
    if again and not broken_constraints(q, again[2], good):
        text, generator, claims, extra = again
        flags += extra + [f"constraint_regenerated: {note}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in good)}"]
        return text, generator, "answer", claims
    text = constraint_refusal(q, broken)
    flags.append(f"constraint_refused: {note}")
    if ctx.on_token:  # the draft was streamed: the user must see that it was withdrawn
        ctx.on_token(f"\n{text}")
    return text, "template", "refuse", []


def _retry_declined(ctx, state: AskState, text: str, generator: str, drafts: list[Draft], flags: list[str]):
    """The model said the documents do not say. When the verifier is sure a passage answers, ask once more from
    the verified passages, most sufficient first (the 1.5B model declines multi-hop questions that the same
    passages answer); else it is the refusal it says. (text, generator, route, claims, the declined draft)."""
    retry = _declined_retry(ctx, state)
    again = _again(ctx, state, retry, drafts, 2, "the documents do say") if retry else None
    if again:
        declined, (text, generator, claims, extra) = text, again
        flags += extra + [f"answer_regenerated: the model said the documents do not say, the verifier gave "
                          f"[{retry[0].n}] P={retry[0].support:.2f}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in retry)}"]
        return text, generator, "answer", claims, {"text": declined, "claims": []}
    flags.append("generator_declined: the model found no answer in the passages")
    if retry and ctx.on_token:
        ctx.on_token(f"\n[no answer from the verified passages either]\n{text}")
    return text, generator, "refuse", [], {}


def _drafted(ctx, state: AskState, passages, flags: list[str], drafts: list[Draft]) -> tuple[str, str]:
    """The answer over ``passages`` (or the treatment's rewrite); a model's answer is rendered from the structure it
    filled (generate/structured.py), so nothing is rephrased or re-cited here."""
    q, d, r = state.request.question, state.decision, state.request
    if state.draft is not None:  # a treatment rewrote the answer: check it, do not generate
        draft = Draft(state.draft, "doctor")
        if ctx.on_token:
            ctx.on_token(state.draft)
    else:
        shown = _selection(ctx, state, passages)
        draft = ctx.generator.generate(GenerateInput(q, tuple(passages), d, state.conflicts, r.sub_questions,
                                                     r.show_relevance, r.prompt_variant,
                                                     shown.excerpts if shown else None), ctx.on_token)
    drafts.append(draft)
    if draft.reply_form == "text":
        flags.append("reply_not_structured: the model's reply was not the answer schema; read as one claim")
    if draft.finish_reason == "length":
        flags.append("truncated: the answer hit llm_max_tokens")
    return draft.text, draft.generator


def _claims(ctx, state: AskState, drafts: list[Draft], text: str, passages) -> tuple[list, str]:
    """The answer's claims — a structured draft's items, else the sentences of the text the system wrote — and the
    text, re-rendered when the checks kept fewer of a claim's citations (only the passages that state it)."""
    draft = drafts[-1] if drafts else None
    q = state.request.question
    if draft is None or draft.items is None:
        return check_claims(text, passages, ctx.judge, ctx.settings, q), text
    if draft.status == "not_in_documents":
        return [], text
    claims = check_items(draft.items, passages, ctx.judge, ctx.settings, q)
    if [c.cited for c in claims] != [tuple(dict.fromkeys(i.evidence)) for i in draft.items if i.text.strip()]:
        items = tuple(Item(c.text, c.cited) for c in claims)
        text = render_reply(Reply(draft.status, items, draft.reply_form), language_of(q) == "zh",
                      numbered=state.decision.question_type == "how-to", valid={p.n for p in passages})
    return claims, text


def _declined(drafts: list[Draft], text: str) -> bool:
    """The model said the passages do not hold the answer (a structured draft's status, else its words)."""
    draft = drafts[-1] if drafts else None
    if draft is not None and draft.items is not None:
        return draft.status == "not_in_documents"
    return declines(text)


def _selection(ctx, state: AskState, passages):
    """Context selection (generate/select.py) for a model generator, when on; None = the passages whole."""
    from ragclinic.models.judge import relevance_threshold

    s = ctx.settings
    if not s.context_select or state.request.show_relevance or getattr(ctx.generator, "name", "") != "llm":
        return None
    threshold = relevance_threshold(ctx.judge, s.gate_threshold_judge) if ctx.judge is not None else None
    points = {p.n: t for p in passages if (t := point_excerpt(p)) is not None}
    if not points:
        return select_context(state.request.question, passages, threshold=threshold, conflicts=state.conflicts)
    # a community passage shows the summary points it holds, and is never ruled out (the map step chose it)
    rest = select_context(state.request.question, [p for p in passages if p.n not in points], threshold=threshold,
                          conflicts=state.conflicts)
    shown = dict(rest.excerpts) | points
    excerpts = tuple((p.n, shown[p.n]) for p in passages if p.n in shown)
    full = rest.chars_full + sum(len(" ".join(p.chunk.text.split())) for p in passages if p.n in points)
    return replace(rest, excerpts=excerpts, chars_full=full, chars_shown=sum(len(t) for _, t in excerpts))


def _again(ctx, state: AskState, passages, drafts: list[Draft], variant: int, why: str):
    """One more answer from ``passages`` with prompt ``variant``: (text, generator, claims, flags) when a claim
    of it is supported, else None."""
    if ctx.on_token:
        ctx.on_token(f"\n[{why}: answering again from the verified passages]\n")
    extra: list[str] = []
    st = replace(state, request=replace(state.request, prompt_variant=variant)) if variant else state
    text, generator = _drafted(ctx, st, passages, extra, drafts)
    claims, text = _claims(ctx, st, drafts, text, passages)
    if any(c.verdict in ("supported", "uncited") for c in claims) and not _declined(drafts, text):
        return text, generator, claims, extra
    return None


def _declined_retry(ctx, state: AskState) -> tuple[Passage, ...]:
    """The verified passages to answer again from after a decline: only when the best reaches
    ``decline_retry_evidence`` by a cheap verifier and no treatment wrote the answer."""
    if not cheap(ctx.judge) or state.draft is not None:
        return ()
    good = _verified_passages(ctx, state, [])
    return good if good and good[0].support >= ctx.settings.decline_retry_evidence else ()


def _verified_passages(ctx, state: AskState, failed_claims) -> tuple[Passage, ...]:
    """The passages the verifier found sufficient, best first (at most 3), without those the failed answer cited."""
    from ragclinic.models.judge import relevance_threshold

    need = relevance_threshold(ctx.judge, ctx.settings.gate_threshold_judge)
    used = {n for c in failed_claims for n in c.cited}
    good = sorted((p for p in state.passages if p.support >= need and p.n not in used and p.support_by != "lexical"),
                  key=lambda p: -p.support)
    return tuple(good[:3])


def _unbacked(claims, judge) -> bool:
    """Every checkable claim of the answer unsupported or contradicted, by a cheap verifier (the 1.5B judge is not
    trusted with this: it is asked only about claims word overlap doubts)."""
    checked = [c for c in claims if c.verdict != "invalid_citation"]
    return cheap(judge) and bool(checked) and all(c.verdict in ("unsupported", "contradicted") for c in checked)


def _refusal(question: str, d) -> str:
    if "no passage" in d.reason:
        return render("no_hits", question)
    if "side(s)" in d.reason:
        return render("one_side", question, found="one side", missing=d.reason.split("side(s) ")[1].split(" of")[0])
    return render("no_evidence", question)


def _confidence(d, claims, route: str) -> float:
    """Answers: half evidence score, half share of claims supported. Refusals: how clearly evidence is absent."""
    if route != "answer":
        return max(0.0, min(1.0, 1.0 - d.evidence_score))
    checkable = [c for c in claims if c.verdict != "uncited"]
    ok = sum(c.verdict == "supported" for c in checkable) / len(checkable) if checkable else 0.5
    return max(0.0, min(1.0, 0.5 * d.evidence_score + 0.5 * ok))


LAYER_FUNCS = {"retrieve": retrieve, "scope": scope, "gate": gate, "generate": generate}
