"""A refusal's care: only what can change it, within ``doctor_refusal_budget_s`` (issue 33 item 5).

A refusal ("not in the documents": the gate refused, or the generator declined) is changed only by other
passages. When the first retrieval was strong — its best passage holds at least ``doctor_refusal_coverage`` of
the question's content words, or the gate judged the evidence sufficient and the generator declined — a rewrite
of the question brings back the same passages: nothing is re-run, and the doctor's record says why. When it was
weak, one retrieval treatment (the first the router proposes: decompose, expand_terms, prf_rewrite, …) is tried;
an interactive clarifying question (no model call) stays allowed. Everything else is skipped with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragclinic.types import AskState
from ragclinic.text.support import coverage
from ragclinic.types import Answer

# changes that bring other passages: a re-run from retrieval, or the knowledge graph's communities
_RETRIEVAL_LAYERS = ("retrieve",)
_EVIDENCE_TREATMENTS = ("use_communities",)


def is_refusal(answer: Answer | None) -> bool:
    return answer is not None and (answer.route == "refuse" or answer.refused)


@dataclass(frozen=True)
class RefusalCare:
    """How the first retrieval went for a refused question, and so what the doctor may try."""

    weak: bool  # the search may have missed: one retrieval treatment is worth its time
    why: str  # for the trace

    def to_json(self) -> dict[str, Any]:
        return {"retrieval": "weak" if self.weak else "strong", "why": self.why}


def assess(state: AskState, min_coverage: float) -> RefusalCare:
    """Weak when no passage came back or the best one misses much of the question's words (the search may have
    missed the answer: another query or retriever may find it); strong otherwise."""
    d = state.decision
    flags = state.answer.flags if state.answer is not None else ()
    if (why := next((f for f in flags if f.startswith(("constraint_refused", "answer_unsupported"))), None)):
        # the passages are about another year / event, or do not state the model's answer: other passages can
        return RefusalCare(True, f"the answer was withheld ({why.split(':')[0]}): other passages may hold it")
    if d is not None and d.route == "answer":
        return RefusalCare(False, f"the gate found the evidence sufficient ({d.evidence_score:.2f}); "
                                  "the generator declined: other passages cannot change that")
    if not state.passages:
        return RefusalCare(True, "no passage in scope matched the question")
    asked = (state.request.question,) + tuple(state.request.sub_questions)
    best = min(max(coverage(q, p.chunk.text) for p in state.passages) for q in asked)
    if best >= min_coverage:
        return RefusalCare(False, f"the best passage holds {best:.0%} of the question's words "
                                  f"(≥ doctor_refusal_coverage {min_coverage:.0%}) and does not answer it: "
                                  "a rewritten question retrieves the same passages")
    return RefusalCare(True, f"the best passage holds only {best:.0%} of the question's words "
                             f"(< doctor_refusal_coverage {min_coverage:.0%})")


def can_change(change) -> bool:
    """A change that can turn a refusal into an answer: other passages (or the interactive question back)."""
    return change.layer in _RETRIEVAL_LAYERS or change.treatment in _EVIDENCE_TREATMENTS or change.terminal


def select(steps: list, care: RefusalCare, tried: int) -> tuple[list, list[dict[str, Any]]]:
    """(the steps to try, the skipped ones with their reasons): at most one retrieval change per refusal, and
    none when the retrieval was strong. ``tried``: retrieval changes already tried on this question."""
    keep, skipped = [], []
    for sym, change in steps:
        if change.terminal:
            keep.append((sym, change))
            continue
        if not can_change(change):
            why = "cannot change a refusal: it re-uses the passages that hold no answer"
        elif not care.weak:
            why = "the first retrieval was strong: " + care.why
        elif tried >= 1:
            why = "one retrieval treatment per refusal"
        else:
            keep.append((sym, change))
            tried += 1
            continue
        skipped.append({"treatment": change.treatment, "symptom": sym.name, "layer": change.layer,
                        "change": change.describe, "reason": why})
    return keep, skipped
