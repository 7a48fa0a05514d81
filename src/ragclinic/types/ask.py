"""What flows through the query half of the pipeline: the request and the state after each layer."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragclinic.config import Settings
from ragclinic.types.data import Answer, Conflict, Exclusion, GateDecision, Hit, Passage
from ragclinic.types.scope import Scope

_DEFAULT = {k: Settings.model_fields[k].default for k in ("top_k", "context_k", "retriever", "rerank")}


@dataclass(frozen=True)
class AskRequest:
    question: str
    scope: Scope = field(default_factory=Scope)
    scope_pairs: tuple[tuple[str, str], ...] = ()  # as the user gave them (for the trace)
    # the defaults are the settings' (config/settings.py is the one place they are written)
    top_k: int = _DEFAULT["top_k"]
    context_k: int = _DEFAULT["context_k"]
    retriever: str = _DEFAULT["retriever"]
    rerank: bool = _DEFAULT["rerank"]
    enforced: tuple[tuple[str, str], ...] = ()  # tags every passage must have, whatever the scope asked (a key's tenant)
    conversation: tuple[str, ...] = ()  # the user's earlier questions in this chat (a follow-up's references)
    original: str = ""  # the user's words when ``question`` is their follow-up with its pronoun resolved
    # --- set by the doctor's treatments (defaults: the plain pipeline)
    search_queries: tuple[str, ...] = ()  # retrieve: run these instead of the question, merged
    sub_questions: tuple[str, ...] = ()  # retrieve each, share the context, answer each (compound, readings)
    fusion_weights: tuple[tuple[str, float], ...] = ()  # retrieve: hybrid weights instead of the settings'
    quarantine: tuple[str, ...] = ()  # scope: chunk ids kept out of the context (kept in the trace)
    max_per_doc: int = 0  # scope: at most this many passages per document (0 = no cap)
    show_relevance: bool = False  # generate: the prompt shows each passage's evidence score
    prompt_variant: int = 0  # generate: 0 = the standard prompt; others for voting
    graph_route: str = ""  # gate: "global" = answer from the graph's communities, whatever the rules said


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
    draft: str | None = None  # generate: an answer text set by a treatment (checked, not generated)
