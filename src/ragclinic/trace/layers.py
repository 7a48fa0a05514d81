"""The one table of layers (issue 54): each layer's name, the function that runs it, what its span records (input and
output types, trace/views.py), the debugger's probe, its OpenTelemetry span kind and the doctor's routes from its
symptoms to treatments. The runner, the trace codec, the debugger, telemetry, metrics and the doctor's router all read
this table; adding a layer or a treatment is one entry here plus its module (docs/architecture.md's worked examples).

Functions and probes are named as ``"module:attribute"``: this table sits low (the trace package), below the code
that runs them, and each reader resolves only what it uses (``resolve``); tests/trace/test_layers.py resolves every
one of them. The built-in layers' span types are trace/views.py's; a layer added later may name types of its own
module the same way (docs/architecture.md, "A query layer")."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ragclinic.trace.views import (GateInput, GateOutput, GenerateOutput, GenerateSpanInput, RetrieveInput,
                                   RetrieveOutput, ScopeInput, ScopeOutput)

Routes = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class LayerSpec:
    """``function``: ``(RunContext, AskState) → (AskState, output)`` for a query layer ("" for the ingest layers,
    which run per document, not per question); ``input`` / ``output``: the types its span records; ``probe``: the
    debugger's ``(Case) → LayerReport``; ``span_kind``: OpenInference's kind for its span; ``routes``: the symptoms
    the doctor's detectors find at this layer → the treatments tried for each, best first."""

    name: str
    probe: str  # "": none of its own (the debugger reports the layer as not examined)
    span_kind: str
    function: str = ""
    input: type | str | None = None  # a type, or "module:attribute" (a layer whose types live in its own module)
    output: type | str | None = None
    routes: Routes = field(default_factory=lambda: MappingProxyType({}))

    @property
    def query(self) -> bool:
        """Runs for each question (the runner's order), rather than at ingest."""
        return bool(self.function)

    @property
    def input_type(self) -> type | None:
        return resolve(self.input) if isinstance(self.input, str) else self.input

    @property
    def output_type(self) -> type | None:
        return resolve(self.output) if isinstance(self.output, str) else self.output


def _routes(**routes: tuple[str, ...]) -> Routes:
    return MappingProxyType(dict(routes))


SPECS: tuple[LayerSpec, ...] = (
    LayerSpec("parse", "ragclinic.debugger.source:probe_parse", "CHAIN",
              routes=_routes(ocr_low_confidence=("widen",))),  # another, cleaner source; the lasting fix: a better scan
    LayerSpec("chunk", "ragclinic.debugger.source:probe_chunk", "CHAIN"),
    LayerSpec("retrieve", "ragclinic.debugger.search:probe_retrieve", "RETRIEVER",
              "ragclinic.pipeline.retrieve.layer:retrieve", RetrieveInput, RetrieveOutput,
              _routes(ambiguous=("clarify", "readings"), compound=("decompose",), term_mismatch=("expand_terms",),
                      low_relevance=("prf_rewrite", "switch_retriever", "widen", "rerank"),
                      missing_aspect=("aspect_search",))),
    LayerSpec("scope", "ragclinic.debugger.search:probe_scope", "GUARDRAIL",
              "ragclinic.pipeline.scope.layer:scope", ScopeInput, ScopeOutput,
              _routes(injected_instruction=("quarantine",), homogeneous_context=("diversify",),
                      noisy_context=("filter_context",), conflicting_evidence=("state_conflict",))),
    LayerSpec("gate", "ragclinic.debugger.answer:probe_gate", "EVALUATOR",
              "ragclinic.pipeline.gate.layer:gate", GateInput, GateOutput,
              _routes(global_no_community=("use_communities",),
                      false_premise=("vote",))),  # the prompt already warns of the premise; a variant may heed it
    LayerSpec("generate", "ragclinic.debugger.answer:probe_generate", "CHAIN",
              "ragclinic.pipeline.generate.layer:generate", GenerateSpanInput, GenerateOutput,
              _routes(contradicted_claim=("refine",), unsupported_claim=("refine", "vote"),
                      self_contradiction=("refine",), citation_error=("refine",), ignored_context=("refine", "vote"),
                      off_topic=("vote", "prf_rewrite"))),
)
BY_NAME: Mapping[str, LayerSpec] = MappingProxyType({s.name: s for s in SPECS})
LAYERS = tuple(s.name for s in SPECS)
QUERY_LAYERS = tuple(s.name for s in SPECS if s.query)
ROUTES: dict[str, tuple[str, ...]] = {k: v for s in SPECS for k, v in s.routes.items()}  # the doctor reads it
SPAN_KINDS: Mapping[str, str] = MappingProxyType({**{s.name: s.span_kind for s in SPECS}, "change": "CHAIN"})


def spec(layer: str) -> LayerSpec | None:
    return BY_NAME.get(layer)


def input_for(layer: str, state) -> Any:
    """What a query layer's span records as its input, from the state it starts on (its spec's ``input.of``)."""
    return BY_NAME[layer].input_type.of(state)


def resolve(ref: str) -> Any:
    """The object a ``"module:attribute"`` reference names."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
