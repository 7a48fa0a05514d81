"""The gate layer: ``(context, state) → (state, GateOutput)`` — each passage scored for evidence, the route chosen
(answer, refuse, clarify), then the reasoning stage's paths (tools, the graph) and the question's ambiguity, and
a refusal on weak evidence read once more by the model (gate/reread.py)."""

from __future__ import annotations

from dataclasses import replace

from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.gate.gate import WEAK, decide
from ragclinic.pipeline.gate.reread import second_reading
from ragclinic.trace.views import GateOutput
from ragclinic.types import AskState


def gate(ctx: RunContext, state: AskState) -> tuple[AskState, GateOutput]:
    decision, scored = decide(state.request.question, state.passages, ctx.settings, ctx.judge, ctx.lm)
    r = ctx.stage.after_gate(ctx, state, decision, scored)
    if ctx.settings.gate_reread:  # a refusal on weak evidence, not turned into a graph or tools answer: read again
        r = replace(r, decision=second_reading(state.request.question, r.decision, r.passages, ctx.lm, WEAK))
    out = GateOutput(r.decision, r.passages, {p.n: round(p.support, 4) for p in r.passages},
                     tuple(sorted({p.support_by for p in r.passages})), r.ambiguity, r.tables, r.graph)
    return replace(state, decision=r.decision, passages=r.passages), out
