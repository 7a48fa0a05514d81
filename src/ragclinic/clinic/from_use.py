"""What the Clinic learns from use (issue 56): its online experiments, its library of failed answers, and the
ratings that fill the library. A mixin of ``Clinic`` (clinic.py), kept apart to keep that module readable."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragclinic.cases.library import Cases
from ragclinic.clinic.question import Consultation, Question
from ragclinic.config import Settings
from ragclinic.errors import RagclinicError
from ragclinic.experiment.design import Arm, Design
from ragclinic.experiment.service import Experiments
from ragclinic.trace.model import Trace
from ragclinic.trace.store import add_feedback, round_tokens, set_experiment


@dataclass(frozen=True)
class ArmRun:
    """How ``Clinic.answer`` runs one question: the settings, pipeline and answer-cache key (the clinic's own, or a
    running experiment's arm's), whether the doctor runs, and — in an experiment — what ``finish`` records."""

    settings: Settings
    make_pipeline: Callable[[], Any]  # built on first use: an answer from the cache loads no model
    doctor: bool
    cache_key: dict[str, str] = field(default_factory=dict)
    design: Design | None = None
    arm: Arm | None = None
    unit: str = ""
    started: float = 0.0

    @property
    def pipeline(self):
        return self.make_pipeline()

    def finish(self, clinic, q: Question, seen: Consultation) -> Consultation:
        """``seen`` as returned: in an experiment, its arm written into the trace, its request recorded (wall time,
        model tokens of the question's run and the doctor's re-runs), and the arm named in the answer."""
        if self.design is None or self.arm is None:
            return seen
        mark = {"name": self.design.name, "arm": self.arm.name}
        db = clinic.kb.db
        if seen.trace is not None:
            set_experiment(db, seen.trace.id, {**mark, "unit": self.unit})
        clinic.experiments.record(self.design, self.arm, self.unit, trace_id=seen.answer.trace_id, question=q.text,
                                  enforced=q.enforced_dict, cached=seen.cached, refused=seen.answer.refused,
                                  ms=(time.perf_counter() - self.started) * 1000,
                                  tokens=round_tokens(db, seen.trace.debug_round_id) if seen.trace else 0)
        return replace(seen, experiment=mark)


class FromUse:
    def run_for(self, q: Question) -> ArmRun:
        """The clinic's own run for ``q``, or — while an experiment runs and this clinic joins it — the run of the arm
        ``q.session`` (else ``q.owner``) is assigned to. The arm decides the doctor when it sets it: a request's flag
        would undo the random split."""
        own = self.settings.doctor if q.doctor is None else q.doctor
        design = self.experiments.running() if self.in_experiments else None
        if design is None:
            return ArmRun(self.settings, lambda: self.pipeline, own)
        unit = q.session or q.owner
        arm = design.assign(unit)
        settings = arm.settings_over(self.settings)
        doctor = settings.doctor if ("doctor" in dict(arm.settings) or q.doctor is None) else q.doctor
        return ArmRun(settings, lambda: self.arm_pipeline(design.name, arm, settings), doctor,
                      self.arm_key(design.name, arm), design, arm, unit, time.perf_counter())

    @property
    def experiments(self) -> Experiments:
        """The knowledge base's online experiments (docs/experiments.md): ``start``, ``stop``, ``status``,
        ``listed``, ``report``."""
        return Experiments(self.kb.db, self.settings)

    @property
    def cases(self) -> Cases:
        """The failed-answer library (docs/cases.md): ``listed``, ``show``, ``expect``, ``diagnose``, ``export``."""
        return Cases(self.kb.db, self.diagnose)

    def arm_pipeline(self, name: str, arm: Arm, settings: Settings):
        """An experiment arm's pipeline: its settings over the same knowledge base and model."""
        return self.parts.pipeline_for(f"{name}/{arm.name}", settings)

    @staticmethod
    def arm_key(name: str, arm: Arm) -> dict[str, str]:
        """What keeps an arm's answers apart in the answer cache."""
        return {"\x00experiment": f"{name}/{arm.name}"}

    def arm_of(self, trace: Trace) -> tuple[Settings, Any, dict[str, str]]:
        """(settings, pipeline, answer-cache key) a trace's answer was given with: its experiment arm's when an
        experiment assigned it (and still knows the arm), else the clinic's own."""
        found = self.experiments.design(trace.experiment["name"]) if trace.experiment else None
        arm = next((a for a in found.arms if a.name == trace.experiment.get("arm")), None) if found else None
        if arm is None:
            return self.settings, self.pipeline, {}
        settings = arm.settings_over(self.settings)
        return settings, self.arm_pipeline(found.name, arm, settings), self.arm_key(found.name, arm)

    def feedback(self, trace_id: str, rating: int, note: str = "", expected: Sequence[str] = (), *, key: str = "",
                 enforced: dict[str, str] | None = None, expect_refusal: bool = False) -> dict[str, Any]:
        """Rate an answer: 1 (helpful) or -1 (not), with a note and, optionally, the answer that would have been
        right (``expected``) or that it should have been a refusal (``expect_refusal``: the documents do not answer
        it). Kept on the trace; an unhelpful rating files the answer in the failed-answer library. ``enforced``:
        the caller's tenant tags (only its own traces). → {"trace_id", "feedback": ratings now, "case": id or
        None}."""
        if rating not in (1, -1):
            raise RagclinicError(f"rating {rating!r}: 1 (helpful) or -1 (not helpful)")
        t = self._for_caller(self.trace(trace_id, exact=bool(enforced)), enforced)
        n = add_feedback(self.kb.db, t.id, {"rating": rating, "note": note, "created": time.time(), "key": key,
                                            **({"expected": list(expected)} if expected else {}),
                                            **({"expect_refusal": True} if expect_refusal else {})})
        case = (self.cases.file(self.trace(t.id), comment=note, expected=expected, expect_refusal=expect_refusal)
                if rating == -1 else None)
        return {"trace_id": t.id, "feedback": n, "case": case}


def unrepaired(result) -> str:
    """Why the doctor's answer counts as unrepaired ("" when it does not): symptoms found and no repair kept."""
    if result.symptoms and not any(r.accepted for r in result.repairs):
        return "the doctor could not repair: " + ", ".join(dict.fromkeys(x.name for x in result.symptoms))
    return ""
