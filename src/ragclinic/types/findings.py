"""The doctor's record: the symptoms it found and the repairs it tried (kept on the root trace, in ``ask --json``).

Both read by key as well (``s["name"]``, ``r["after"]["trace_id"]``): the JSON spelling that ``ask --json``, the
trace files and scripts written against them use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


class _ByKey:
    """Read access by the JSON field names (``to_json``)."""

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_json().get(key, default)


@dataclass(frozen=True)
class Symptom(_ByKey):
    name: str
    score: float  # 0..1: how strongly it is present (present at ≥ the doctor's threshold)
    layer: str  # the pipeline layer it points at: retrieve, scope, gate, generate
    evidence: str  # what was seen, for people
    tier: str = "rules"  # the tier that decided
    sure: bool = True  # False: a higher tier could change the score
    data: Mapping[str, Any] = field(default_factory=dict)  # findings the treatments use (parts, terms, ids)
    round: int | None = None  # the doctor's round that found it (the trace's record); None: a detector's finding

    def to_json(self) -> dict[str, Any]:
        d = {"name": self.name, "score": round(self.score, 4), "layer": self.layer, "evidence": self.evidence,
             "tier": self.tier}
        return d if self.round is None else {**d, "round": self.round}

    def found_in(self, rnd: int) -> "Symptom":
        """The record the trace keeps: what ``to_json`` writes, with the round."""
        return Symptom(self.name, round(self.score, 4), self.layer, self.evidence, self.tier, round=rnd)


@dataclass(frozen=True)
class Snapshot(_ByKey):
    """A run as a repair saw it, before or after."""

    answer: str
    route: str
    confidence: float
    symptoms: tuple[str, ...]  # the present ones, by name
    trace_id: str

    def to_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "route": self.route, "confidence": self.confidence,
                "symptoms": list(self.symptoms), "trace_id": self.trace_id}


@dataclass(frozen=True)
class Repair(_ByKey):
    """One treatment the doctor tried, accepted or not, and why."""

    round: int
    treatment: str
    symptom: str
    layer: str
    change: str  # what the treatment changed, for people
    accepted: bool
    reason: str
    before: Snapshot | None
    after: Snapshot | None  # None: the treatment did not run (budget)

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "treatment": self.treatment, "symptom": self.symptom, "layer": self.layer,
                "change": self.change, "accepted": self.accepted, "reason": self.reason,
                "before": self.before.to_json() if self.before else None, "after": self.after.to_json() if self.after else None}
