"""The reasoning stage: the steps beyond plain retrieval-augmented answering, at the named points where the query
layers call them (the runner's layer table, pipeline/runner.py). Each is a no-op where it does not apply.

scope     ``rank``: a causal question's hits re-ranked by the stated cause → effect links (causal.py);
          ``expand``: the graph's chunks 1–2 hops from the question's entities join the passages (graph_steps.py).
gate      ``after_gate``: the tools path for arithmetic and table questions (route.py, planner.py), the ambiguity
          assessment (ambiguity.py), the global / mixed step over the graph's communities (graph_steps.py).
generate  ``tools`` and ``tools_answer``: the answer from the tools' outputs; ``revise``: a causal link stated
          backwards put right, a global answer's points listed; ``chain``: a causal answer's chain and its strength.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.gate.gate import WEAK
from ragclinic.pipeline.gate.qtype import classify_rules
from ragclinic.pipeline.generate.citations import check_claims, citation_of
from ragclinic.pipeline.reason import causal, graph_steps, need
from ragclinic.pipeline.reason.need import Need
from ragclinic.pipeline.reason.ambiguity import assess
from ragclinic.pipeline.reason.planner import ToolsAnswer, answer_with_tools, tables_in_scope
from ragclinic.pipeline.reason.route import choose_path
from ragclinic.text.lang import language_of
from ragclinic.trace.views import GenerateOutput
from ragclinic.types import Answer, AskState, Citation, GateDecision, Hit, Passage

Record = dict[str, Any]


# ---------------------------------------------------------------------- scope
def rank(ctx: RunContext, state: AskState, docs) -> tuple[tuple[Hit, ...], Record | None]:
    """A causal question's hits ranked with the chains the documents state (→ the scope span's causal_ranking)."""
    if not causal.enabled(ctx.kb) or causal_need(ctx, state.request.question, state.hits) is None:
        return state.hits, None
    return causal.rank(ctx.kb, state.request.question, state.hits, ctx.settings.causal_weights, docs,
                       admit=graph_steps.admission(ctx, state))


def expand(ctx: RunContext, state: AskState, passages: list[Passage]) -> Record | None:
    """The graph's expansion of ``passages`` (in place; → the scope span's graph record)."""
    return graph_steps.expand_passages(ctx, state, passages)


def causal_need(ctx: RunContext, question: str, found) -> Need | None:
    """Whether the question needs a cause → effect chain (need.py): the rules' causal type, or, with need routing
    on, an explanation asked in any form over a link the top passages (``found``: hits or passages) state."""
    qtype = classify_rules(question)[0]
    if not ctx.settings.need_routing:
        return Need("causal", "the question's type is causal") if qtype == "causal" else None
    return need.causal_need(question, qtype, causal.passage_links(ctx.kb, list(found)[:CAUSAL_DEPTH]))


CAUSAL_DEPTH = 8  # hits / passages whose stated links a question's explanation form is matched against


# ---------------------------------------------------------------------- gate
@dataclass(frozen=True)
class GateReasoning:
    decision: GateDecision
    passages: tuple[Passage, ...]
    tables: tuple[str, ...]  # the tables the tools path may read
    ambiguity: Record
    graph: Record | None


def after_gate(ctx: RunContext, state: AskState, decision: GateDecision, scored) -> GateReasoning:
    """The gate's decision with the reasoning paths applied: tools, the ambiguity of the question, the graph."""
    decision, tables = _path(ctx, state, decision, scored)
    amb = assess(state.request.question, scored, ctx.settings.ambiguity_threshold)
    decision, scored, graph = graph_steps.global_step(ctx, state, decision, scored)
    decision, graph = _causal_step(ctx, state, decision, scored, graph)
    ambiguity = {**amb.to_json(), "original_question": state.request.original or state.request.question}
    return GateReasoning(decision, tuple(scored), tuple(t["name"] for t in tables), ambiguity, graph)


def _causal_step(ctx: RunContext, state: AskState, decision: GateDecision, scored, graph: Record | None):
    """A question causal by need (need.py) is typed causal; when a passage states the link it asks about, a refusal
    on weak evidence is lifted — a yes/no attribution ("was it the heatwave that ruined the butter?") scores low as
    a statement, yet the passage answers it ("may have contributed"). → (decision, the gate's graph record)."""
    if decision.question_type == "causal" or decision.path != "direct" or decision.route == "clarify":
        return decision, graph
    wanted = causal_need(ctx, state.request.question, scored)
    if wanted is None:
        return decision, graph
    decision = replace(decision, question_type="causal", type_by="need")
    if decision.route == "refuse" and decision.reason.startswith(WEAK) and wanted.link:
        decision = replace(decision, route="answer", reason=f"{decision.reason}; a passage states the link it asks "
                                                            f"about: {wanted.link}")
    return decision, {**(graph or {}), "need": wanted.to_json()}


def _path(ctx: RunContext, state: AskState, decision: GateDecision, scored):
    """The reasoning path (route.py): tools for arithmetic and table questions when a model can plan. A table
    question the passages' words do not reach (a number spread over rows) is answered by the tools even when the
    evidence score alone would refuse it."""
    if not ctx.settings.tools_path or ctx.lm is None or decision.route == "clarify" or not state.passages:
        return decision, []
    tables = tables_in_scope(ctx.kb, scored, state.request.question)
    path, why = choose_path(state.request.question, scored, tables)
    if path == "direct" or (decision.route == "refuse" and not tables):
        return decision, tables
    route = "answer" if tables else decision.route
    reason = decision.reason if decision.route == "answer" else f"{decision.reason}; the tables may answer it"
    return replace(decision, route=route, reason=reason, path=path, path_why=why), tables


# ---------------------------------------------------------------------- generate
def tools(ctx: RunContext, state: AskState, flags: list[str]) -> ToolsAnswer | None:
    """The tools path's run (None when the gate chose another path or a treatment set the draft)."""
    d = state.decision
    if d.route != "answer" or d.path != "tools" or state.draft is not None:
        return None
    tables = tables_in_scope(ctx.kb, state.passages, state.request.question)
    tooled = answer_with_tools(ctx, state, tables, ctx.settings.tools_max_calls)
    flags += tooled.flags
    return tooled


def tools_answer(ctx: RunContext, state: AskState, tooled: ToolsAnswer, flags: list[str]
                 ) -> tuple[AskState, GenerateOutput]:
    """The answer written from the tool outputs (planner.py checked its numbers and cited its sources)."""
    d = state.decision
    if ctx.on_token:
        ctx.on_token(tooled.text)
    by_n = {p.n: p for p in tooled.passages}
    cited = sorted({n for c in tooled.claims for n in c.cited if n in by_n})
    ok = sum(c.verdict == "supported" for c in tooled.claims) / max(1, len(tooled.claims))
    answer = Answer(tooled.text, "answer", d.question_type, False, tuple(citation_of(by_n[n]) for n in cited),
                    tuple(tooled.claims), max(0.0, min(1.0, 0.5 + 0.5 * ok)), getattr(ctx.lm, "model_id", "llm"),
                    tuple(flags), plan=tuple(tooled.plan), tools=tuple(tooled.tools))
    out = GenerateOutput(answer, tooled.prompt_tokens, tooled.completion_tokens, plan=tuple(tooled.plan),
                         tools=tuple(tooled.tools), passages=tuple(tooled.passages))
    return replace(state, answer=answer, passages=tuple(tooled.passages)), out


def revise(ctx: RunContext, state: AskState, text: str, claims, generator: str, flags: list[str]):
    """An answer's text after the reasoning checks: a causal link stated backwards replaced by the passage's own
    sentence; a global answer's map-step points listed under it. → (text, claims checked again)."""
    d = state.decision
    if d.question_type == "causal":
        text, claims = _causal_direction(ctx, state, text, claims, flags)
    if d.path in ("global", "mixed") and generator != "extractive":
        text, claims = graph_steps.with_points(ctx, state, text, claims, flags)
    return text, claims


def _causal_direction(ctx: RunContext, state: AskState, text: str, claims, flags: list[str]):
    """A sentence of the answer that states a passage's cause → effect link backwards is replaced by the passage's
    own sentence, cited (causal.py ``fix_direction``); the claims are checked again on the new text."""
    n_of = {p.chunk.id: p.n for p in state.passages}
    new, fixed = causal.fix_direction(text, causal.passage_links(ctx.kb, state.passages), n_of)
    if not fixed:
        return text, claims
    flags += [f"causal_direction_fixed: {f['said'].strip()[:60]}" for f in fixed]
    return new, check_claims(new, state.passages, ctx.judge, ctx.settings, state.request.question)


_CHAIN_NOTE = {
    ("en", "none"): "The documents state no causal link for this; the related facts are in {cites}.",
    ("zh", "none"): "文档没有说明其中的因果关系；相关内容见{cites}。",
    ("en", "limited"): "Evidence: limited ({why}).", ("zh", "limited"): "证据有限（{why}）。",
    ("en", "conflicting"): "Evidence: conflicting ({why}).", ("zh", "conflicting"): "证据相互矛盾（{why}）。",
}


def chain(ctx: RunContext, state: AskState, text: str, citations: tuple[Citation, ...]):
    """A causal answer states the chain the passages give, cited; the evidence's strength, when not strong, is a note
    beside it. → (text, chain or None, citations, notes); unchanged for other questions."""
    if state.decision.question_type != "causal" or not causal.enabled(ctx.kb):
        return text, None, citations, []
    lang = "zh" if language_of(state.request.question) == "zh" else "en"
    n_of = {p.chunk.id: p.n for p in state.passages}
    found = causal.chain_for(ctx.kb, state.request.question, list(n_of))
    cites = "".join(f"[{n_of[c]}]" for c in found.chunk_ids() if c in n_of)
    if found.links:
        text = f"{text}\n{'因果链' if lang == 'zh' else 'Chain'}: {found.text()} {cites}"
    related = "".join(f"[{c.n}]" for c in citations) or "".join(f"[{p.n}]" for p in state.passages[:2])
    notes = []
    if (lang, found.strength) in _CHAIN_NOTE:
        notes.append(_CHAIN_NOTE[(lang, found.strength)].format(why=found.why, cites=related))
    have, by_n = {c.n for c in citations}, {p.n: p for p in state.passages}
    extra = tuple(citation_of(by_n[n]) for n in sorted({n_of[c] for c in found.chunk_ids()} - have))
    return text, found, tuple(sorted(citations + extra, key=lambda c: c.n)), notes
