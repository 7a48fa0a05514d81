"""Treatments that change the context: filter noise (keeping evidence scores visible) and quarantine
passages that address the model."""

from __future__ import annotations

from dataclasses import replace

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import TREATMENTS, Change


@TREATMENTS.register("filter_context")
class FilterContext:
    """Keep the strong, distinct passages (numbers unchanged, so citations still match) and show the
    generator each one's evidence score."""

    name = "filter_context"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        keep = set(symptom.data.get("keep", ()))
        if not keep or len(keep) == len(exam.passages):
            return []

        def filtered(s):
            return replace(s, passages=tuple(p for p in s.passages if p.n in keep),
                           request=replace(s.request, show_relevance=True))
        dropped = sorted(p.n for p in exam.passages if p.n not in keep)
        return [Change(self.name, "generate", f"dropped weak/redundant passage(s) {dropped}; relevance shown",
                       filtered)]


@TREATMENTS.register("quarantine")
class Quarantine:
    """Keep a passage that addresses the model out of the prompt (it stays in the trace, as an exclusion)."""

    name = "quarantine"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        chunks = tuple(symptom.data.get("chunks", ()))
        if not chunks:
            return []

        def isolate(s):
            return replace(s, request=replace(s.request, quarantine=tuple(dict.fromkeys(s.request.quarantine + chunks))))
        return [Change(self.name, "scope", f"quarantined {len(chunks)} passage(s): {', '.join(chunks)}", isolate)]
