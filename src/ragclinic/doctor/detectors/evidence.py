"""``conflicting_evidence`` (passages disagree on what is asked) and ``false_premise`` (the question
asserts what the best passage contradicts) — both found by the scope and gate layers; the detectors judge
whether the answer dealt with them."""

from __future__ import annotations

from ragclinic.doctor.symptoms import DETECTORS, Exam
from ragclinic.types import Symptom


@DETECTORS.register("conflicting_evidence")
class ConflictingEvidence:
    name, layer, tier = "conflicting_evidence", "scope", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        conflicts = exam.state.conflicts
        if not conflicts:
            return Symptom(self.name, 0.0, self.layer, "no conflicting values among the top passages")
        c = conflicts[0]
        ev = f"{c.kind}: {', '.join(c.values_a)} vs {', '.join(c.values_b)} ({c.chunk_a} / {c.chunk_b})"
        answer = exam.answer.text if exam.answer else ""
        stated = any(v in answer for v in c.values_a) and any(v in answer for v in c.values_b)
        if stated:
            return Symptom(self.name, 0.3, self.layer, ev + "; the answer states both values")
        return Symptom(self.name, 0.9, self.layer, ev + "; the answer does not state both values",
                       data={"conflicts": len(conflicts)})


@DETECTORS.register("false_premise")
class FalsePremise:
    name, layer, tier = "false_premise", "gate", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        d = exam.state.decision
        if d is None or not d.false_premise:
            return Symptom(self.name, 0.0, self.layer, "no premise of the question is contradicted")
        answer = exam.answer.text if exam.answer else ""
        corrected = any(w in answer.lower() for w in ("premise", "前提", "actually", "实际上", "not ", "并非", "不是"))
        score = 0.3 if corrected else 0.85
        return Symptom(self.name, score, self.layer,
                       d.reason + ("; the answer corrects it" if corrected else "; the answer does not correct it"))
