"""The Treatment role: given a symptom, propose changes — each alters one thing of a run (the query, the
retrieval parameters, the context, the answer) and names the layer that thing feeds, where the pipeline
re-runs (``Pipeline.rerun``) with everything upstream taken from the trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.types import AskState
from ragclinic.registry import Registry


@dataclass(frozen=True)
class Change:
    treatment: str
    layer: str  # where the re-run starts: retrieve, scope, gate or generate
    describe: str  # what changed, for the trace and the user
    apply: Callable[[AskState], AskState]
    uses_model: bool = True  # the re-run calls the language model (to generate or to judge)
    terminal: bool = False  # the result is returned as is (the interactive clarify route)
    notes: tuple[str, ...] = ()  # shown beside the answer this change drafts (Answer.notes), never in its text


class Treatment(Protocol):
    name: str

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        """Changes worth trying for ``symptom`` (none when the treatment does not apply here)."""
        ...


TREATMENTS: Registry[Treatment] = Registry("treatment")


def with_request(**changes) -> Callable[[AskState], AskState]:
    """A change that sets fields of the run's request (the re-run reads them from there)."""
    return lambda s: replace(s, request=replace(s.request, **changes))
