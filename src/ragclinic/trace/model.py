"""Trace data: JSON-friendly frozen dataclasses (what is persisted is exactly ``to_dict``)."""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

# The layer names, defined here only (the debugger, the doctor, the CLI and the benches import them).
LAYERS = ("parse", "chunk", "retrieve", "scope", "gate", "generate")
QUERY_LAYERS = ("retrieve", "scope", "gate", "generate")
CHANGE = "change"  # the span a re-run writes for the state its change started from (trace/states.py)


def new_trace_id() -> str:
    return time.strftime("%Y%m%d") + "-" + uuid.uuid4().hex[:10]


@dataclass(frozen=True)
class Span:
    layer: str
    status: str  # "ok", "error" (the model crashed in it; an "ok" span of the same layer follows), "replayed"
    started_ms: float  # offset from the start of the trace
    duration_ms: float
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def seconds(self) -> float:
        return self.duration_ms / 1000.0

    @property
    def input(self):
        """The inputs, typed (trace/views.py: RetrieveInput, ScopeInput, GateInput, GenerateInput, ChangeInput)."""
        from ragclinic.trace.views import typed_input

        return typed_input(self.layer, self.inputs)

    @property
    def output(self):
        """The outputs, typed (RetrieveOutput with .hits, ScopeOutput, GateOutput, GenerateOutput with .answer,
        ChangeOutput with .state); None for a span that ended in an error."""
        from ragclinic.trace.views import typed_output

        return typed_output(self.layer, self.outputs)


@dataclass(frozen=True)
class ModelCall:
    seq: int
    layer: str
    kind: str  # "chat" or "probs"
    model_id: str
    key: str  # hash of (kind, messages, parameters): how a replay finds the frozen output
    messages: list[dict[str, str]]
    output: Any  # completion text, or {candidate: probability}
    prompt_tokens: int
    completion_tokens: int
    duration_ms: float
    params: dict[str, Any] = field(default_factory=dict)
    prompt_reused: int = 0  # prompt tokens the model did not evaluate again (kept KV prefix, remembered call)


@dataclass(frozen=True)
class Trace:
    id: str
    debug_round_id: str  # groups a query with the doctor's and debugger's re-runs of it
    created: float
    query: str
    scope: dict[str, str]
    settings: dict[str, Any]
    kb_version: int
    spans: tuple[Span, ...]
    model_calls: tuple[ModelCall, ...]
    final: dict[str, Any]  # the Answer's JSON
    parent_id: str = ""  # the trace this one re-ran, if any
    rerun_from: str = ""  # the layer the re-run started at
    symptoms: tuple[dict[str, Any], ...] = ()  # the doctor's findings (on the root trace of a round)
    repairs: tuple[dict[str, Any], ...] = ()  # the doctor's treatments, accepted or not
    request: dict[str, Any] = field(default_factory=dict)  # the AskRequest (with any treatment's changes)
    doctor: dict[str, Any] = field(default_factory=dict)  # the doctor's outcome: answer kept, budget used
    feedback: tuple[dict[str, Any], ...] = ()  # users' ratings (1 / -1) and notes, newest last

    def span(self, layer: str) -> Span | None:
        """The layer's span that produced the state (not one that ended in an error)."""
        return next((s for s in self.spans if s.layer == layer and s.status != "error"), None)

    @property
    def question(self) -> str:
        return self.query

    @property
    def answer(self):
        """The recorded answer (an ``Answer``; for the doctor's root trace, the plain pipeline's)."""
        from ragclinic.types import Answer

        return Answer.from_json(self.final)

    def state_after(self, layer: str):
        """The pipeline's ``AskState`` right after ``layer`` ran (trace/states.py)."""
        from ragclinic.trace.states import state_after

        return state_after(self, layer)

    @property
    def total_ms(self) -> float:
        return max((s.started_ms + s.duration_ms for s in self.spans), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trace":
        d = dict(d)
        d["spans"] = tuple(Span(**s) for s in d.get("spans", ()))
        d["model_calls"] = tuple(ModelCall(**c) for c in d.get("model_calls", ()))
        d["symptoms"] = tuple(d.get("symptoms", ()))
        d["repairs"] = tuple(d.get("repairs", ()))
        d["feedback"] = tuple(d.get("feedback", ()))
        return cls(**d)
