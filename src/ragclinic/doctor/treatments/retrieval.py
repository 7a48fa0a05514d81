"""Treatments that change the retrieval parameters: widen, switch retriever / fusion weights, judge rerank,
diversify the context across documents."""

from __future__ import annotations

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import TREATMENTS, Change, with_request
from ragclinic.pipeline.gate import is_model_judge


@TREATMENTS.register("widen")
class Widen:
    """Three times the hits, three more passages for the gate."""

    name = "widen"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        r = exam.state.request
        top_k, context_k = min(3 * r.top_k, 60), min(r.context_k + 3, 12)
        if top_k == r.top_k and context_k == r.context_k:
            return []
        return [Change(self.name, "retrieve", f"top_k {r.top_k} → {top_k}, context_k {r.context_k} → {context_k}",
                       with_request(top_k=top_k, context_k=context_k))]


@TREATMENTS.register("switch_retriever")
class SwitchRetriever:
    """Lean on the other retriever than the one that found the current best hit (dense ↔ lexical-heavy)."""

    name = "switch_retriever"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        r = exam.state.request
        if r.retriever != "hybrid":
            other = "dense" if r.retriever == "lexical" else "lexical"
            if other == "dense" and (exam.kb is None or exam.kb.embedder is None):
                return []
            return [Change(self.name, "retrieve", f"retriever {r.retriever} → {other}", with_request(retriever=other))]
        if exam.kb is not None and exam.kb.embedder is None:
            return []
        top = exam.state.hits[0] if exam.state.hits else None
        ranks = {s.retriever: s.rank for s in top.sources} if top else {}
        lexical_led = ranks.get("lexical", 10**6) <= ranks.get("dense", 10**6)
        weights = (("dense", 1.0), ("lexical", 0.25)) if lexical_led else (("dense", 0.25), ("lexical", 1.0))
        label = "dense-heavy" if lexical_led else "lexical-heavy"
        return [Change(self.name, "retrieve", f"hybrid weights → {label} {dict(weights)}",
                       with_request(fusion_weights=weights))]


@TREATMENTS.register("rerank")
class Rerank:
    """Judge-rerank the hits (costly: one model call per hit; only with a model judge)."""

    name = "rerank"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if exam.state.request.rerank or not is_model_judge(exam.judge):
            return []
        return [Change(self.name, "retrieve", "judge rerank of the top hits", with_request(rerank=True))]


@TREATMENTS.register("diversify")
class Diversify:
    """At most two passages per document, so other documents (other views) reach the context."""

    name = "diversify"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        return [Change(self.name, "scope", "at most 2 passages per document", with_request(max_per_doc=2))]
