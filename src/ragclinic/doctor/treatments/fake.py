"""A scripted treatment for tests (not registered: the router's own list stays the built-ins)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import Change
from ragclinic.types import AskState


class ScriptedTreatment:
    """Proposes one change (``apply`` at ``layer``) for the symptoms it is ``for_symptoms``."""

    def __init__(self, name: str = "scripted", layer: str = "generate", for_symptoms: Sequence[str] = ("scripted",),
                 apply: Callable[[AskState], AskState] = lambda s: s, uses_model: bool = False) -> None:
        self.name, self.layer, self.for_symptoms = name, layer, tuple(for_symptoms)
        self._apply, self._uses_model = apply, uses_model

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if symptom.name not in self.for_symptoms:
            return []
        return [Change(self.name, self.layer, f"scripted change for {symptom.name}", self._apply, self._uses_model)]
