"""Typed views of a span's inputs and outputs (``Span.input``, ``Span.output``), decoded by the trace codec.

The persisted form stays the JSON of ``Span.inputs`` / ``Span.outputs``; these are what a Python reader
gets instead of raw dicts (``span.output.hits[0].chunk.id``, not ``span.outputs["hits"][0]["chunk"]["id"]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragclinic.trace.codec import (conflict_from_dict, decision_from_dict, exclusion_from_dict, hit_from_dict,
                                   passage_from_dict)
from ragclinic.types import Answer, Conflict, Exclusion, GateDecision, Hit, Passage


@dataclass(frozen=True)
class RetrieveInput:
    query: str
    top_k: int
    retriever: str
    rerank: bool
    scope: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RetrieveOutput:
    hits: tuple[Hit, ...]
    retriever: str
    queries: tuple[str, ...]
    rerank: bool
    allowed_chunks: int | None  # chunks the scope allowed (None: everything)
    scope_filter_ms: float


@dataclass(frozen=True)
class ScopeInput:
    hits: int
    context_k: int


@dataclass(frozen=True)
class ScopeOutput:
    passages: tuple[Passage, ...]
    excluded: tuple[Exclusion, ...]
    conflicts: tuple[Conflict, ...]
    reordered_by_authority: Any
    filters: dict[str, str]


@dataclass(frozen=True)
class GateInput:
    passages: int


@dataclass(frozen=True)
class GateOutput:
    decision: GateDecision
    passages: tuple[Passage, ...]  # scored: .support, .support_by
    support_by: tuple[str, ...]


@dataclass(frozen=True)
class GenerateInput:
    route: str


@dataclass(frozen=True)
class GenerateOutput:
    answer: Answer
    prompt_tokens: int
    completion_tokens: int
    context: dict[str, Any] | None  # what the generator was shown (context selection), None: passages whole
    unsupported_draft: dict[str, Any] | None  # a withdrawn or regenerated draft


@dataclass(frozen=True)
class ChangeInput:
    from_layer: str
    changed: tuple[str, ...]  # state fields ("passages", "decision", "request.top_k", ...)


@dataclass(frozen=True)
class ChangeOutput:
    state: Any  # the AskState the re-run started from


def typed_input(layer: str, d: dict[str, Any]):
    if layer == "retrieve":
        return RetrieveInput(d.get("query", ""), d.get("top_k", 0), d.get("retriever", ""), bool(d.get("rerank")),
                             dict(d.get("scope", {})))
    if layer == "scope":
        return ScopeInput(d.get("hits", 0), d.get("context_k", 0))
    if layer == "gate":
        return GateInput(d.get("passages", 0))
    if layer == "generate":
        return GenerateInput(d.get("route", ""))
    if layer == "change":
        return ChangeInput(d.get("from_layer", ""), tuple(d.get("changed", ())))
    return d  # parse / chunk spans of other tools: as recorded


def typed_output(layer: str, o: dict[str, Any]):
    if not o:
        return None  # a span that ended in an error
    if layer == "retrieve":
        return RetrieveOutput(tuple(hit_from_dict(h) for h in o["hits"]), o.get("retriever", ""),
                              tuple(o.get("queries", ())), bool(o.get("rerank")), o.get("allowed_chunks"),
                              float(o.get("scope_filter_ms", 0.0)))
    if layer == "scope":
        return ScopeOutput(tuple(passage_from_dict(p) for p in o["passages"]),
                           tuple(exclusion_from_dict(e) for e in o["excluded"]),
                           tuple(conflict_from_dict(c) for c in o["conflicts"]), o.get("reordered_by_authority"),
                           dict(o.get("filters", {})))
    if layer == "gate":
        return GateOutput(decision_from_dict(o["decision"]), tuple(passage_from_dict(p) for p in o["passages"]),
                          tuple(o.get("support_by", ())))
    if layer == "generate":
        return GenerateOutput(Answer.from_json(o["answer"]), o.get("prompt_tokens", 0), o.get("completion_tokens", 0),
                              o.get("context"), o.get("unsupported_draft"))
    if layer == "change":
        from ragclinic.trace.states import state_from_dict

        return ChangeOutput(state_from_dict(o["state"]))
    return o
