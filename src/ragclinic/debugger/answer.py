"""The answer-side probes, by counterfactual re-runs of the recorded trace (the doctor's restart-from-layer
mechanism). gate: with the gold chunk in the context, does the gate let the question through — and with no
evidence, did it answer anyway? generate: with the gold chunk injected and everything else fixed, does the
generator answer right? The bad answer's claim-level support is reported alongside.

The probes run for a key without a tenant (the server refuses diagnose to a tenant's key): a re-run whose gold chunk
lies outside the trace's tenant is the admin's (``Pipeline.rerun(admin=True)``: a debug round of its own, no
enforced tags), so the tenant never reads the other tenant's text through it."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from ragclinic.debugger.base import Case, Fix, LayerReport, fault, not_reached, ok
from ragclinic.types import AskState
from ragclinic.types import Passage
from ragclinic.verify.answer_check import backing


def _with_gold(case: Case, force_answer: bool = False):
    """A change putting the gold chunk first in the context (the rest kept up to context_k) and, for the
    generate probe, the gate's decision set to answer."""
    gold = case.gold_hits[:max(1, len({s.chunk.id for s in case.said}))]  # every chunk a part is said in
    docs = case.kb.db.doc_infos([h.chunk.doc_id for h in gold])

    def change(state: AskState) -> AskState:
        ids = {h.chunk.id for h in gold}
        kept = [p for p in state.passages if p.chunk.id not in ids]
        k = max(1, state.request.context_k)
        top = max((p.support for p in kept), default=1.0)  # the gold passage as well supported as the best
        new = [Passage(0, h, docs[h.chunk.doc_id], support=top) for h in gold if h.chunk.doc_id in docs] + kept
        passages = tuple(replace(p, n=i) for i, p in enumerate(new[:k], start=1))
        out = replace(state, passages=passages)
        if force_answer and state.decision is not None and state.decision.route != "answer":
            out = replace(out, decision=replace(state.decision, route="answer",
                                                reason="debugger: answer forced to test the generator"))
        return out

    return change


def _gold_in_context(case: Case) -> int | None:
    gold = case.gold_ids()
    return next((p.n for p in case.passages() if p.chunk.id in gold), None)


def probe_gate(case: Case) -> LayerReport:
    made = case.state_after("gate").decision if case.trace.span("gate") else None
    decision: dict[str, Any] = asdict(made) if made is not None else {}  # as the report shows it
    if case.expect.expect_refusal:
        if decision.get("route") == "clarify":
            return ok("the gate asked a clarifying question instead of answering", decision=decision)
        if decision.get("route") == "answer" and not case.trace.final.get("refused"):
            return _answered_without_evidence(case, decision)
        return ok("the question was refused" + (" by the gate" if decision.get("route") != "answer" else
                                                " (the generator declined)"), decision=decision)
    if not case.gold_hits:
        return not_reached("no gold chunk to put in the context")
    if case.satisfied:
        return ok("the answer is right", decision=decision)
    if _gold_in_context(case) is not None and decision.get("route") == "answer":
        case.counterfactual = (None, case.trace)
        return ok(f"the gold chunk was in the context and the gate answered ({decision.get('reason')})",
                  decision=decision)
    state, trace = case.pipeline.rerun(case.trace, "gate", change=_with_gold(case), admin=True)
    case.counterfactual = (state, trace)
    d = state.decision
    if d.route != "answer":
        name = _threshold_name({"reason": d.reason})
        lower = round(max(0.0, d.evidence_score - 0.02), 3)
        return fault(f"with the gold chunk in the context the gate still says {d.route}: {d.reason}",
                     f"gate refused with {d.reason}: lower {name} or check the judge on this passage",
                     Fix(f"{name} {lower:.2f}", settings={name: lower}),
                     decision={"route": d.route, "evidence_score": d.evidence_score, "reason": d.reason},
                     counterfactual_trace=trace.id)
    return ok(f"with the gold chunk in the context the gate answers ({d.reason})", counterfactual_trace=trace.id)


def _answered_without_evidence(case: Case, decision: dict[str, Any]) -> LayerReport:
    """The gate answered a question no passage should answer. When its threshold refused and the model's second
    reading (gate_reread) answered from a passage, the threshold is not what let it through: the reading is. Else
    a higher threshold — and, with the second reading on, the same without it, since a refusal on weak evidence is
    read again and may be answered anyway."""
    score = decision.get("evidence_score", 0.0)
    name = _threshold_name(decision)
    if decision.get("reread"):
        return fault(f"the gate's threshold refused, but the model's second reading answered from passage "
                     f"[{decision['reread']}] ({decision.get('reason')})",
                     f"the model read passage [{decision['reread']}] again and found an answer no passage states: turn "
                     "the second reading off (gate_reread = false) or use a stronger model (--llm)",
                     Fix("no second reading (gate_reread off)", settings={"gate_reread": False}), decision=decision)
    higher = round(min(1.0, score + 0.05), 3)
    fixes = [Fix(f"{name} {higher:.2f}", settings={name: higher})]
    if case.pipeline.settings.gate_reread and case.pipeline.lm is not None:
        fixes.append(Fix(f"{name} {higher:.2f} and no second reading (gate_reread off)",
                         settings={name: higher, "gate_reread": False}))
    return fault(f"the gate answered though no passage should support an answer ({decision.get('reason')})",
                 f"gate answered with evidence score {score:.2f} and no real evidence: raise {name} above {score:.2f}",
                 *fixes, decision=decision)


def _threshold_name(decision: dict[str, Any]) -> str:
    return "gate_threshold_lexical" if "lexical" in str(decision.get("reason", "")) else "gate_threshold_judge"


def probe_generate(case: Case) -> LayerReport:
    final = case.trace.final
    claims = [{"text": c.get("text", "")[:160], "verdict": c.get("verdict")} for c in final.get("claims", [])]
    if case.expect.expect_refusal:
        if final.get("refused") or final.get("generator") == "template":
            return ok("nothing was generated: refused") if final.get("generator") == "template" else \
                ok("the generator declined to answer")
        return fault("the generator stated an answer no passage should support",
                     "the generator answered without evidence: let it decline (a stronger model, or the doctor's "
                     "weak-answer refusal)", answer=final.get("answer", "")[:300], claims=claims)
    if not case.gold_hits:
        return not_reached("no gold chunk to inject")
    if case.satisfied:
        return ok("the answer is right", claims=claims)
    state, trace = case.counterfactual or (None, None)
    if trace is None or (state is not None and state.decision.route != "answer"):
        state, trace = case.pipeline.rerun(case.trace, "generate", change=_with_gold(case, force_answer=True),
                                           admin=True)
    answer = state.answer.to_json() if state is not None else trace.final
    gold = case.gold_ids()
    gold_n = (next((p.n for p in state.passages if p.chunk.id in gold), None) if state is not None
              else _gold_n(trace, gold))
    right = case.expect.satisfied_by(answer)
    if not right and case.said:  # an answer expected in other words: does this one state every part?
        right = all(backing(case.trace.query, s.part, answer.get("answer", "")).backed for s in case.said)
    if right is None:  # only the gold document is known: did the answer use it?
        gold_docs = {d["doc_id"] for d in case.gold_docs}
        right = any(c.get("doc_id") in gold_docs for c in answer.get("citations", []))
    if right:
        return ok("with the gold chunk injected the generator answers right", answer=answer.get("answer", "")[:300],
                  counterfactual_trace=trace.id)
    where = f"passage [{gold_n}]" if gold_n else "the gold passage"
    if computed := sorted({f for s in case.said for f in s.computed}):
        return fault(f"with the chunk the expected figure is computed from injected as {where} the generator still "
                     f"answers wrong", f"the expected {', '.join(computed)} is stated nowhere: it is computed from the "
                     f"figures in {where}; the tools path computes it (tools_path, with the model), or try a stronger "
                     "model (--llm)", *_compute_fixes(case), *_generate_fixes(case, gold_n),
                     answer=answer.get("answer", "")[:300], claims=claims, counterfactual_trace=trace.id)
    if len({s.part for s in case.said}) > 1:
        return _parts_left_out(case, answer, state, gold_n, claims, trace.id)
    return fault(f"with the gold chunk injected as {where} the generator still answers wrong",
                 f"generator ignored {where} that states the answer: try a stronger model (--llm), fewer passages "
                 "(context_k), or the doctor's refine treatment", *_generate_fixes(case, gold_n),
                 answer=answer.get("answer", "")[:300], claims=claims, counterfactual_trace=trace.id)


def _parts_left_out(case: Case, answer: dict, state, gold_n: int | None, claims: list, trace_id: str) -> LayerReport:
    """An answer of several parts (a summary over documents) that leaves some out though every chunk saying one
    was in the context: the parts it left out, and the passages that say them."""
    text = answer.get("answer", "")
    numbered = {p.chunk.id: p.n for p in state.passages} if state is not None else {}
    left = [s for s in case.said if not backing(case.trace.query, s.part, text).backed]
    n = len({s.part for s in case.said})
    shown = "; ".join(f"'{s.part}'" + (f" [{numbered[s.chunk.id]}]" if s.chunk.id in numbered else "") for s in left)
    return fault(f"with the {len({s.chunk.id for s in case.said})} chunks that say the expected answer's {n} parts "
                 f"injected, the generator still leaves out {len(left)}: {shown}",
                 f"the answer states {n - len(left)} of {n} parts though every part's passage was given: try a "
                 "stronger model (--llm), fewer passages (context_k), or the doctor's refine treatment",
                 *_generate_fixes(case, gold_n), answer=text[:300], claims=claims, counterfactual_trace=trace_id,
                 left_out=[{"part": s.part, "doc_id": s.chunk.doc_id, "chunk": s.chunk.ordinal} for s in left])


def _generate_fixes(case: Case, gold_n: int | None) -> tuple[Fix, ...]:
    """The prompt as standard, the other answer prompt wording, then fewer passages around the gold one."""
    req, s = case.request, case.pipeline.settings  # the run's settings (a caller may have changed the KB's)
    fixes = [Fix("the standard answer prompt", request={"prompt_variant": 0})] if req.prompt_variant else []
    other = 1 if s.answer_prompt == 2 else 2
    fixes.append(Fix(f"answer prompt {other}", settings={"answer_prompt": other}))
    keep = max(1, min(req.context_k - 1, gold_n or 2))
    if keep < req.context_k:
        fixes.append(Fix(f"{keep} passage(s) in the context (context_k)", settings={"context_k": keep},
                         request={"context_k": keep}))
    return tuple(fixes)


def _compute_fixes(case: Case) -> tuple[Fix, ...]:
    """The tools path (the planner's calculator) for an answer computed from stated figures, when it is off."""
    return () if case.pipeline.settings.tools_path else (Fix("the tools path (tools_path)",
                                                             settings={"tools_path": True}),)


def _gold_n(trace, gold: set[str]) -> int | None:
    layer = "gate" if trace.span("gate") else "scope" if trace.span("scope") else None
    passages = trace.state_after(layer).passages if layer else ()
    return next((p.n for p in passages if p.chunk.id in gold), None)
