"""Trace data: JSON-friendly frozen dataclasses (what is persisted is exactly ``to_dict``)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import RagclinicError
from ragclinic.trace import codec
from ragclinic.trace.layers import LAYERS, QUERY_LAYERS  # noqa: F401  (LAYERS re-exported: its old home)
from ragclinic.trace.views import ChangeInput, ChangeOutput
from ragclinic.types import Answer, AskRequest, AskState, Repair, Scope, Symptom

# The layer names, from the one table of layers (trace/layers.py; the debugger, the doctor, the CLI and the benches
# import them from here or there).
ACTIVE = "active_retrieval"  # the span of active retrieval inside generate (pipeline/generate/active.py)
CHANGE = "change"  # the span a re-run writes for the state its change started from (change_span)


def new_trace_id() -> str:
    return time.strftime("%Y%m%d") + "-" + uuid.uuid4().hex[:10]


@dataclass(frozen=True)
class Span:
    layer: str
    status: str  # "ok", "error" (the model crashed in it; an "ok" span of the same layer follows), "replayed"
    started_ms: float  # offset from the start of the trace
    duration_ms: float
    # typed (trace/views.py): RetrieveInput … GenerateSpanInput, ChangeInput; RetrieveOutput (.hits), ScopeOutput,
    # GateOutput, GenerateOutput (.answer), ChangeOutput (.state); None for a span that ended in an error.
    # A dict given here is decoded (trace/codec.py); parse / chunk spans of other tools keep theirs.
    input: Any = None
    output: Any = None
    error: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.input, dict):
            object.__setattr__(self, "input", codec.decode_input(self.layer, self.input))
        if isinstance(self.output, dict):
            object.__setattr__(self, "output", codec.decode_output(self.layer, self.output))

    @property
    def seconds(self) -> float:
        return self.duration_ms / 1000.0

    @property
    def inputs(self) -> dict[str, Any]:
        """The input as stored (JSON); Python readers use ``input``."""
        return codec.encode_input(self.layer, self.input)

    @property
    def outputs(self) -> dict[str, Any]:
        """The output as stored (JSON); Python readers use ``output``."""
        return codec.encode_output(self.layer, self.output)


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
    # the hidden state a chat call read (models/hidden.py), by layer: a replay gives the probe the same reading
    hidden: dict[str, list[float]] = field(default_factory=dict)
    # each sampled token's [offset in the output, log-probability] when the caller asked (active retrieval reads them)
    logprobs: list[list[float]] = field(default_factory=list)


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
    symptoms: tuple[Symptom, ...] = ()  # the doctor's findings (on the root trace of a round)
    repairs: tuple[Repair, ...] = ()  # the doctor's treatments, accepted or not
    request: dict[str, Any] = field(default_factory=dict)  # the AskRequest (with any treatment's changes)
    doctor: dict[str, Any] = field(default_factory=dict)  # the doctor's outcome: answer kept, budget used
    feedback: tuple[dict[str, Any], ...] = ()  # users' ratings (1 / -1) and notes, newest last
    experiment: dict[str, Any] = field(default_factory=dict)  # {name, arm, unit} when an experiment assigned it

    def span(self, layer: str) -> Span | None:
        """The layer's span that produced the state (not one that ended in an error)."""
        return next((s for s in self.spans if s.layer == layer and s.status != "error"), None)

    @property
    def question(self) -> str:
        return self.query

    @property
    def answer(self) -> Answer:
        """The recorded answer (for the doctor's root trace, the plain pipeline's)."""
        return Answer.from_json(self.final)

    def state_after(self, layer: str) -> AskState:
        """The pipeline's ``AskState`` right after ``layer`` ran (``state_after`` below)."""
        return state_after(self, layer)

    @property
    def total_ms(self) -> float:
        return max((s.started_ms + s.duration_ms for s in self.spans), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return codec.trace_to_dict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trace":
        return cls(**codec.trace_fields(d, Span, ModelCall))


# ---------------------------------------------------------------------- states from a trace
# A layer's span holds its output; the state after a layer is the request plus every earlier span's output. A re-run
# that changed the state before restarting (a treatment filtering passages, a probe putting the gold passage in, a
# changed gate decision) records the state it started from in a ``change`` span, so the child trace replays to its
# own answer without its parent. The runner's re-runs, replay, the doctor and the debugger's probes all use these.
def _check_layer(layer: str) -> None:
    if layer not in QUERY_LAYERS:
        raise RagclinicError(f"cannot start at layer {layer!r}; query layers: {', '.join(QUERY_LAYERS)}")


def request_from_trace(trace: Trace) -> AskRequest:
    """The request a trace ran with (traces before the doctor stored only the plain pipeline's inputs)."""
    if trace.request:
        return codec.request_from_dict({**trace.request, "scope_pairs": tuple(sorted(dict(trace.scope).items()))})

    def default(name: str):
        return trace.settings.get(name, Settings.model_fields[name].default)

    pairs = dict(trace.scope)
    r, sc = trace.span("retrieve"), trace.span("scope")
    return AskRequest(trace.query, Scope.parse(pairs), tuple(sorted(pairs.items())),
                      r.input.top_k if r else default("top_k"), sc.input.context_k if sc else default("context_k"),
                      r.input.retriever if r else default("retriever"), r.input.rerank if r else default("rerank"))


def active_span(started_ms: float, record: dict) -> Span:
    """The span of active retrieval inside generate (pipeline/generate/active.py): its record as input and output."""
    return Span(ACTIVE, "ok", started_ms, record.get("ms", 0.0), {"threshold": record["threshold"]}, record)


def change_span(before: AskState, after: AskState, from_layer: str) -> Span:
    """The span a re-run writes when its ``change`` altered the state: what differs, and the state it starts from."""
    changed = sorted(f.name for f in fields(AskState)
                     if f.name not in ("request", "answer") and getattr(before, f.name) != getattr(after, f.name))
    changed += sorted(f"request.{f.name}" for f in fields(AskRequest)
                      if f.name != "scope" and getattr(before.request, f.name) != getattr(after.request, f.name))
    return Span(CHANGE, "applied", 0.0, 0.0, ChangeInput(from_layer, tuple(changed)), ChangeOutput(after))


def start_of(trace: Trace, layer: str) -> AskState:
    """The state ``trace`` had when ``layer`` started: a re-run's recorded starting state (its change span)
    when the layer is at or after the re-run's start, the request otherwise; then every layer's output
    from there to ``layer``."""
    _check_layer(layer)
    change = trace.span(CHANGE)
    if change is not None and QUERY_LAYERS.index(layer) >= QUERY_LAYERS.index(trace.rerun_from):
        state, begin = change.output.state, trace.rerun_from
    else:
        state, begin = AskState(request_from_trace(trace)), "retrieve"
    for name in QUERY_LAYERS[QUERY_LAYERS.index(begin):QUERY_LAYERS.index(layer)]:
        span = trace.span(name)
        if span is None:
            raise RagclinicError(f"trace {trace.id} has no {name} span; re-run from an earlier layer")
        state = span.output.apply(state)
    return state


def state_after(trace: Trace, layer: str) -> AskState:
    """The state right after ``layer`` ran in ``trace`` (after generate: with the recorded answer)."""
    _check_layer(layer)
    state = start_of(trace, layer)
    span = trace.span(layer)
    if span is None:
        raise RagclinicError(f"trace {trace.id} has no {layer} span")
    return span.output.apply(state)
