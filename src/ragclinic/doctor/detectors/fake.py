"""A scripted detector for tests (not registered: the doctor's own list stays the built-ins)."""

from __future__ import annotations

from collections.abc import Callable

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom


class ScriptedDetector:
    """Reports ``name`` at ``layer`` with the score ``score(exam)`` gives (None: the symptom does not apply)."""

    def __init__(self, name: str = "scripted", layer: str = "generate", tier: str = "rules",
                 score: Callable[[Exam], float | None] = lambda exam: 0.9, evidence: str = "scripted") -> None:
        self.name, self.layer, self.tier, self._score, self._evidence = name, layer, tier, score, evidence

    def detect(self, exam: Exam) -> Symptom | None:
        s = self._score(exam)
        return None if s is None else Symptom(self.name, max(0.0, min(1.0, s)), self.layer, self._evidence)
