"""What each query layer's span records, typed: its input (``Span.input``) and its output (``Span.output``).

The layers return these outputs (pipeline/*/layer.py); ``apply`` gives the state after the layer from the state
before it, which is how a re-run, a replay and ``Trace.state_after`` rebuild a state from a trace. Their JSON is
written and read in trace/codec.py only. Open-shaped records (the graph's, the causal ranking's, the ambiguity
assessment, the context selection, a withdrawn draft, the tools' plan and calls) are kept as mappings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ragclinic.types import Answer, AskState, Conflict, Exclusion, GateDecision, Hit, Passage

Record = Mapping[str, Any]  # an open-shaped record, as the step that made it wrote it


@dataclass(frozen=True)
class RetrieveInput:
    query: str
    top_k: int
    retriever: str
    rerank: bool
    scope: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, state: AskState) -> "RetrieveInput":
        r = state.request
        return cls(r.question, r.top_k, r.retriever, r.rerank, dict(r.scope_pairs))

    @classmethod
    def from_dict(cls, d: Record) -> "RetrieveInput":
        return cls(d.get("query", ""), d.get("top_k", 0), d.get("retriever", ""), bool(d.get("rerank")),
                   dict(d.get("scope", {})))


@dataclass(frozen=True)
class RetrieveOutput:
    hits: tuple[Hit, ...]
    retriever: str = ""
    queries: tuple[str, ...] = ()
    rerank: bool = False
    allowed_chunks: int | None = None  # chunks the scope allowed (None: everything)
    scope_filter_ms: float = 0.0
    excluded: tuple[Exclusion, ...] | None = None  # documents the version policy excluded (None: not recorded)

    def apply(self, state: AskState) -> AskState:
        extra = {"excluded": self.excluded} if self.excluded is not None else {}
        return replace(state, hits=self.hits, allowed_chunks=self.allowed_chunks, **extra)


@dataclass(frozen=True)
class ScopeInput:
    hits: int
    context_k: int

    @classmethod
    def of(cls, state: AskState) -> "ScopeInput":
        return cls(len(state.hits), state.request.context_k)

    @classmethod
    def from_dict(cls, d: Record) -> "ScopeInput":
        return cls(d.get("hits", 0), d.get("context_k", 0))


@dataclass(frozen=True)
class ScopeOutput:
    passages: tuple[Passage, ...]
    excluded: tuple[Exclusion, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    reordered_by_authority: int = 0  # hits the authority policy moved
    filters: dict[str, str] = field(default_factory=dict)
    allowed_chunks: int | None = None
    causal_ranking: Record | None = None  # reason/causal.py: the chain's ranking of the hits (causal questions)
    graph: Record | None = None  # reason/graph_steps.py: the graph expansion (None: not run)

    def apply(self, state: AskState) -> AskState:
        return replace(state, passages=self.passages, conflicts=self.conflicts, excluded=self.excluded)


@dataclass(frozen=True)
class GateInput:
    passages: int

    @classmethod
    def of(cls, state: AskState) -> "GateInput":
        return cls(len(state.passages))

    @classmethod
    def from_dict(cls, d: Record) -> "GateInput":
        return cls(d.get("passages", 0))


@dataclass(frozen=True)
class GateOutput:
    decision: GateDecision
    passages: tuple[Passage, ...]  # scored: .support, .support_by
    supports: dict[int, float] = field(default_factory=dict)  # passage number → evidence score
    support_by: tuple[str, ...] = ()
    ambiguity: Record = field(default_factory=dict)  # reason/ambiguity.py's assessment, with original_question
    tables: tuple[str, ...] = ()  # the tables the tools path may read
    graph: Record | None = None  # the global / mixed step's record

    def apply(self, state: AskState) -> AskState:
        return replace(state, decision=self.decision, passages=self.passages)


@dataclass(frozen=True)
class GenerateSpanInput:
    route: str

    @classmethod
    def of(cls, state: AskState) -> "GenerateSpanInput":
        return cls(state.decision.route if state.decision else "")

    @classmethod
    def from_dict(cls, d: Record) -> "GenerateSpanInput":
        return cls(d.get("route", ""))


@dataclass(frozen=True)
class GenerateOutput:
    answer: Answer
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context: Record | None = None  # what the generator was shown (context selection), None: passages whole
    unsupported_draft: Record | None = None  # a withdrawn or regenerated draft
    # the tools path's answer: each plan the model wrote, each tool call, the passages it cited (None: not that path)
    plan: tuple[Record, ...] | None = None
    tools: tuple[Record, ...] | None = None
    passages: tuple[Passage, ...] | None = None  # the passages answered from, when not the gate's
    # the answerability combiner's parts and verdict on the first draft (verify/probe.py; None: no probe reading)
    answerability: Record | None = None
    # active retrieval's record (generate/active.py; the run's ``active_retrieval`` span shows it), None: not on
    active: Record | None = None

    def apply(self, state: AskState) -> AskState:
        """The answer; and the passages it cites from, when this layer replaced them (the tools path, an active
        retrieval that kept its second answer)."""
        if self.passages is not None:
            decided = (self.active or {}).get("decision")  # active retrieval's second gate decided the answer
            return replace(state, answer=self.answer, passages=self.passages,
                           decision=GateDecision(**decided) if decided else state.decision)
        return replace(state, answer=self.answer)


@dataclass(frozen=True)
class ChangeInput:
    from_layer: str
    changed: tuple[str, ...]  # state fields ("passages", "decision", "request.top_k", ...)


@dataclass(frozen=True)
class ChangeOutput:
    state: AskState  # the state the re-run started from


LayerOutput = RetrieveOutput | ScopeOutput | GateOutput | GenerateOutput
