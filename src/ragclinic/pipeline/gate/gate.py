"""The gate's decision: answer, refuse or clarify — always with a reason — plus the false-premise check."""

from __future__ import annotations

from collections.abc import Sequence

from ragclinic.models.judge import Judge
from ragclinic.models.llm import LanguageModel
from ragclinic.pipeline.gate.evidence import (comparison_sides, decisive, is_model_judge, score_passages,
                                              side_support, threshold)
from ragclinic.pipeline.gate.premise import false_premise
from ragclinic.pipeline.gate.qtype import classify_llm, classify_rules
from ragclinic.pipeline.gate.templates import render
from ragclinic.text.support import content_terms
from ragclinic.types import GateDecision, Passage


WEAK = "best evidence score"  # how a refusal on weak evidence begins (gate/reread.py reads it again)


def question_type(question: str, lm: LanguageModel | None) -> tuple[str, str]:
    qtype, sure = classify_rules(question)
    if sure or lm is None:
        return qtype, "rules"
    return (classify_llm(lm, question) or qtype), "llm"


def decide(question: str, passages: Sequence[Passage], settings, judge: Judge | None,
           lm: LanguageModel | None) -> tuple[GateDecision, list[Passage]]:
    """The decision and the passages with their evidence scores (in the same order)."""
    qtype, type_by = question_type(question, lm)
    if not content_terms(question):
        return GateDecision("clarify", qtype, 0.0, "the question has no content terms to search for", type_by,
                            clarifying_question=render("clarify", question)), list(passages)
    if not passages:
        return GateDecision("refuse", qtype, 0.0, "no passage in scope matched the question", type_by), []
    scored = score_passages(question, passages, judge, settings)
    basis = decisive(scored)
    best = max(p.support for p in basis)
    need = threshold(scored, settings, judge)
    top = max(basis, key=lambda p: p.support)
    by = top.support_by + (f": [{top.n}] {top.support_why}" if top.support_why else "")
    if qtype == "comparison" and (sides := comparison_sides(question)):
        # each side needs its own evidence; the whole question rarely sits in one passage
        side_scores = {side: side_support(side, scored) for side in sides}
        missing = [side for side, v in side_scores.items() if v < settings.gate_threshold_lexical]
        if missing:
            return GateDecision("refuse", qtype, min(side_scores.values()), f"no evidence for side(s) "
                                f"{', '.join(missing)} of the comparison", type_by), scored
        return GateDecision("answer", qtype, min(side_scores.values()), "evidence for both sides: " + ", ".join(
            f"{k} {v:.2f}" for k, v in side_scores.items()), type_by), scored
    if best < need:
        return GateDecision("refuse", qtype, best, f"{WEAK} {best:.2f} < {need:.2f} threshold "
                                                   f"(scored by {by})", type_by), scored
    premise = false_premise(question, scored, judge if is_model_judge(judge) else None)
    if premise:
        return GateDecision("answer", qtype, best, premise, type_by, false_premise=True), scored
    return GateDecision("answer", qtype, best, f"best evidence score {best:.2f} ≥ {need:.2f} (scored by {by})",
                        type_by), scored
