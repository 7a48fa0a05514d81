"""What flows through the query half of the pipeline: the request and the state after each layer."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragclinic.pipeline.scope.filters import Scope
from ragclinic.types import Answer, Conflict, Exclusion, GateDecision, Hit, Passage


@dataclass(frozen=True)
class AskRequest:
    question: str
    scope: Scope = field(default_factory=Scope)
    scope_pairs: tuple[tuple[str, str], ...] = ()  # as the user gave them (for the trace)
    top_k: int = 10
    context_k: int = 5
    retriever: str = "hybrid"
    rerank: bool = False


@dataclass(frozen=True)
class AskState:
    request: AskRequest
    hits: tuple[Hit, ...] = ()  # retrieve
    allowed_chunks: int | None = None  # retrieve: size of the scope pre-filter (None = everything)
    excluded: tuple[Exclusion, ...] = ()  # scope: documents the policies excluded
    passages: tuple[Passage, ...] = ()  # scope → gate (scored) → generate
    conflicts: tuple[Conflict, ...] = ()  # scope
    decision: GateDecision | None = None  # gate
    answer: Answer | None = None  # generate
