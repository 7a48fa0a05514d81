"""The trace's one codec: typed values ⇄ the JSON a trace is stored as. Nothing else builds or reads span dicts.

Chunks are stored whole (text and offsets), so a re-run works even after the document changed. Readers accept every
trace written since traces existed (missing keys take their defaults); writers write exactly today's keys, in
today's order (tests/fixtures/traces holds traces written by earlier code).
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, is_dataclass
from typing import Any, Callable

from ragclinic.types import (Answer, AskRequest, AskState, Chunk, Conflict, DocInfo, Exclusion, GateDecision, Hit,
                             Passage, Repair, Scope, Snapshot, SourceScore, Symptom)
from ragclinic.trace.layers import spec
from ragclinic.trace.views import (ChangeInput, ChangeOutput, GateOutput, GenerateOutput, RetrieveOutput,
                                   ScopeOutput)

JSON = dict[str, Any]


# ---------------------------------------------------------------------- the parts
def chunk_to_dict(c: Chunk) -> JSON:
    d = {f.name: getattr(c, f.name) for f in fields(c)}  # not asdict: metadata is a read-only mapping
    d["section"] = list(c.section)
    d["metadata"] = dict(c.metadata)
    return d


def chunk_from_dict(d: JSON) -> Chunk:
    return Chunk(**{**d, "section": tuple(d.get("section", ())), "metadata": d.get("metadata", {})})


def hit_to_dict(h: Hit) -> JSON:
    return {"chunk": chunk_to_dict(h.chunk), "score": h.score, "rowid": h.rowid,
            "sources": [asdict(s) for s in h.sources]}


def hit_from_dict(d: JSON) -> Hit:
    return Hit(chunk=chunk_from_dict(d["chunk"]), score=d["score"], rowid=d["rowid"],
               sources=tuple(SourceScore(**s) for s in d["sources"]))


def doc_to_dict(d: DocInfo) -> JSON:
    return {"doc_id": d.doc_id, "path": d.path, "title": d.title, "tags": dict(d.tags)}


def passage_to_dict(p: Passage) -> JSON:
    return {"n": p.n, "hit": hit_to_dict(p.hit), "doc": doc_to_dict(p.doc),
            "support": p.support, "support_by": p.support_by, "marks": list(p.marks), "support_why": p.support_why}


def passage_from_dict(d: JSON) -> Passage:
    return Passage(n=d["n"], hit=hit_from_dict(d["hit"]), doc=DocInfo(**d["doc"]), support=d["support"],
                   support_by=d["support_by"], marks=tuple(d["marks"]), support_why=d.get("support_why", ""))


def conflict_from_dict(d: JSON) -> Conflict:
    return Conflict(**{**d, "values_a": tuple(d["values_a"]), "values_b": tuple(d["values_b"])})


def _many(decode: Callable[[JSON], Any], items) -> tuple:
    return tuple(decode(x) for x in items or ())


# ---------------------------------------------------------------------- requests and states
_TUPLES = {"scope_pairs", "search_queries", "sub_questions", "quarantine", "fusion_weights", "enforced", "conversation"}
_REQUEST_FIELDS = [f.name for f in fields(AskRequest) if f.name != "scope"]  # the scope is rebuilt from its pairs


def request_to_dict(r: AskRequest) -> JSON:
    return json.loads(json.dumps({k: getattr(r, k) for k in _REQUEST_FIELDS}))  # tuples → lists


def request_from_dict(d: JSON) -> AskRequest:
    d = {k: tuple(tuple(x) if isinstance(x, list) else x for x in v) if k in _TUPLES else v
         for k, v in d.items() if k in _REQUEST_FIELDS}
    enforced = tuple(d.get("enforced", ()))
    return AskRequest(**{**d, "scope": Scope.parse(dict(d.get("scope_pairs", ()))).require(enforced)})


def state_to_dict(state: AskState) -> JSON:
    """Everything a layer reads (the answer is what generate makes, so it is not part of a starting state)."""
    return {"request": request_to_dict(state.request), "hits": [hit_to_dict(h) for h in state.hits],
            "allowed_chunks": state.allowed_chunks, "excluded": [asdict(e) for e in state.excluded],
            "passages": [passage_to_dict(p) for p in state.passages],
            "conflicts": [asdict(c) for c in state.conflicts],
            "decision": decision_to_dict(state.decision) if state.decision is not None else None,
            "draft": state.draft}


def state_from_dict(d: JSON) -> AskState:
    return AskState(request_from_dict(d["request"]), hits=_many(hit_from_dict, d["hits"]),
                    allowed_chunks=d["allowed_chunks"], excluded=_many(lambda e: Exclusion(**e), d["excluded"]),
                    passages=_many(passage_from_dict, d["passages"]),
                    conflicts=_many(conflict_from_dict, d["conflicts"]),
                    decision=GateDecision(**d["decision"]) if d["decision"] is not None else None, draft=d["draft"])


# ---------------------------------------------------------------------- span inputs
def encode_input(layer: str, x: Any) -> JSON:
    if (s := spec(layer)) is not None and s.input is not None and isinstance(x, s.input_type):
        return asdict(x)
    if isinstance(x, ChangeInput):
        return {"from_layer": x.from_layer, "changed": list(x.changed)}
    return dict(x or {})  # parse / chunk spans of other tools: as recorded


def decode_input(layer: str, d: JSON) -> Any:
    if (s := spec(layer)) is not None and s.input is not None:
        return s.input_type.from_dict(d)  # the layer table's input type (trace/layers.py)
    if layer == "change":
        return ChangeInput(d.get("from_layer", ""), tuple(d.get("changed", ())))
    return d


# ---------------------------------------------------------------------- span outputs
def encode_output(layer: str, o: Any) -> JSON:
    if o is None:
        return {}  # a span that ended in an error
    encode = _ENCODERS.get(type(o))
    if encode is not None:
        return encode(o)
    return asdict(o) if is_dataclass(o) else dict(o)  # a layer the codec has no encoder for: its fields


def decode_output(layer: str, o: JSON) -> Any:
    if not o:
        return None
    s = spec(layer)  # the layer table's output type (trace/layers.py) names its decoder
    kind = s.output_type if s is not None else None
    decode = _DECODERS.get(kind) if s is not None else _DECODERS.get(layer)
    if decode is None and kind is not None:  # a layer without a decoder here: its type's own, or its fields
        decode = getattr(kind, "from_dict", None) or (lambda d: kind(**d))
    return decode(o) if decode is not None else o


def _retrieve_out(o: RetrieveOutput) -> JSON:
    d = {"retriever": o.retriever, "queries": list(o.queries), "rerank": o.rerank, "allowed_chunks": o.allowed_chunks,
         "scope_filter_ms": o.scope_filter_ms, "hits": [hit_to_dict(h) for h in o.hits]}
    if o.excluded is not None:
        d["excluded"] = [asdict(e) for e in o.excluded]
    return d


def _retrieve_in(o: JSON) -> RetrieveOutput:
    excluded = _many(lambda e: Exclusion(**e), o["excluded"]) if "excluded" in o else None
    return RetrieveOutput(_many(hit_from_dict, o.get("hits")), o.get("retriever", ""), tuple(o.get("queries", ())),
                          bool(o.get("rerank")), o.get("allowed_chunks"), float(o.get("scope_filter_ms", 0.0)),
                          excluded)


def _scope_out(o: ScopeOutput) -> JSON:
    d = {"passages": [passage_to_dict(p) for p in o.passages], "reordered_by_authority": o.reordered_by_authority,
         "excluded": [asdict(e) for e in o.excluded], "conflicts": [asdict(c) for c in o.conflicts],
         "filters": dict(o.filters), "allowed_chunks": o.allowed_chunks}
    if o.causal_ranking is not None:
        d["causal_ranking"] = o.causal_ranking
    if o.graph is not None:
        d["graph"] = o.graph
    return d


def _scope_in(o: JSON) -> ScopeOutput:
    return ScopeOutput(_many(passage_from_dict, o.get("passages")), _many(lambda e: Exclusion(**e), o.get("excluded")),
                       _many(conflict_from_dict, o.get("conflicts")), o.get("reordered_by_authority") or 0,
                       dict(o.get("filters", {})), o.get("allowed_chunks"), o.get("causal_ranking"), o.get("graph"))


def _gate_out(o: GateOutput) -> JSON:
    d = {"decision": decision_to_dict(o.decision), "supports": dict(o.supports), "support_by": list(o.support_by),
         "passages": [passage_to_dict(p) for p in o.passages], "ambiguity": o.ambiguity}
    if o.tables:
        d["tables"] = list(o.tables)
    d["graph"] = o.graph
    return d


def _gate_in(o: JSON) -> GateOutput:
    return GateOutput(GateDecision(**o["decision"]), _many(passage_from_dict, o.get("passages")),
                      {int(n): v for n, v in (o.get("supports") or {}).items()}, tuple(o.get("support_by", ())),
                      o.get("ambiguity") or {}, tuple(o.get("tables", ())), o.get("graph"))


def _generate_out(o: GenerateOutput) -> JSON:
    d = {"answer": o.answer.to_json(), "prompt_tokens": o.prompt_tokens, "completion_tokens": o.completion_tokens}
    if o.plan is not None:  # the tools path
        d.update(plan=list(o.plan), tools=list(o.tools or ()))
    if o.passages is not None:
        d["passages"] = [passage_to_dict(p) for p in o.passages]
    if o.context is not None:
        d["context"] = o.context
    if o.unsupported_draft is not None:
        d["unsupported_draft"] = o.unsupported_draft
    if o.answerability is not None:
        d["answerability"] = o.answerability
    if o.active is not None:
        d["active"] = o.active
    return d


def _generate_in(o: JSON) -> GenerateOutput:
    tools = "plan" in o
    return GenerateOutput(Answer.from_json(o["answer"]), o.get("prompt_tokens", 0), o.get("completion_tokens", 0),
                          o.get("context"), o.get("unsupported_draft"), tuple(o["plan"]) if tools else None,
                          tuple(o.get("tools", ())) if tools else None,
                          _many(passage_from_dict, o["passages"]) if "passages" in o else None,
                          o.get("answerability"), o.get("active"))


_ENCODERS = {RetrieveOutput: _retrieve_out, ScopeOutput: _scope_out, GateOutput: _gate_out,
             GenerateOutput: _generate_out, ChangeOutput: lambda o: {"state": state_to_dict(o.state)}}
_DECODERS = {RetrieveOutput: _retrieve_in, ScopeOutput: _scope_in, GateOutput: _gate_in, GenerateOutput: _generate_in,
             "change": lambda o: ChangeOutput(state_from_dict(o["state"]))}


# ---------------------------------------------------------------------- the doctor's record
def symptom_from_dict(d: JSON) -> Symptom:
    return Symptom(d["name"], d.get("score", 0.0), d.get("layer", ""), d.get("evidence", ""), d.get("tier", "rules"),
                   round=d.get("round"))


def repair_from_dict(d: JSON) -> Repair:
    def snap(s: JSON | None) -> Snapshot | None:
        return None if s is None else Snapshot(s.get("answer", ""), s.get("route", ""), s.get("confidence", 0.0),
                                                tuple(s.get("symptoms", ())), s.get("trace_id", ""))

    return Repair(d["round"], d["treatment"], d.get("symptom", ""), d.get("layer", ""), d.get("change", ""),
                  bool(d.get("accepted")), d.get("reason", ""), snap(d.get("before")), snap(d.get("after")))


# ---------------------------------------------------------------------- whole traces
def span_to_dict(span) -> JSON:
    return {"layer": span.layer, "status": span.status, "started_ms": span.started_ms,
            "duration_ms": span.duration_ms, "inputs": encode_input(span.layer, span.input),
            "outputs": encode_output(span.layer, span.output), "error": span.error}


def trace_to_dict(t) -> JSON:
    """A Trace's JSON (what is stored): the keys of every trace file, in their order."""
    return {"id": t.id, "debug_round_id": t.debug_round_id, "created": t.created, "query": t.query,
            "scope": dict(t.scope), "settings": dict(t.settings), "kb_version": t.kb_version,
            "spans": [span_to_dict(s) for s in t.spans], "model_calls": [_call_to_dict(c) for c in t.model_calls],
            "final": dict(t.final), "parent_id": t.parent_id, "rerun_from": t.rerun_from,
            "symptoms": [s.to_json() for s in t.symptoms], "repairs": [r.to_json() for r in t.repairs],
            "request": dict(t.request), "doctor": dict(t.doctor), "feedback": [dict(f) for f in t.feedback],
            **({"experiment": dict(t.experiment)} if t.experiment else {})}  # only when an experiment assigned it


def trace_fields(d: JSON, span: Callable[..., Any], call: Callable[..., Any]) -> JSON:
    """A stored trace's fields, decoded (``span`` and ``call``: the Span and ModelCall classes)."""
    d = dict(d)
    d["spans"] = tuple(span(s["layer"], s["status"], s["started_ms"], s["duration_ms"],
                            decode_input(s["layer"], s.get("inputs") or {}),
                            decode_output(s["layer"], s.get("outputs") or {}), s.get("error", ""))
                       for s in d.get("spans", ()))
    d["model_calls"] = tuple(call(**c) for c in d.get("model_calls", ()))
    d["symptoms"] = tuple(symptom_from_dict(s) for s in d.get("symptoms", ()))
    d["repairs"] = tuple(repair_from_dict(r) for r in d.get("repairs", ()))
    d["feedback"] = tuple(d.get("feedback", ()))
    return d


def _call_to_dict(c) -> JSON:
    """A model call as stored; its hidden state and token log-probabilities only when read (older traces keep their
    form)."""
    d = asdict(c)
    for key in ("hidden", "logprobs"):
        if not d.get(key):
            d.pop(key, None)
    return d


def decision_to_dict(d: GateDecision) -> dict:
    """A gate decision's JSON; ``reread`` only when a second reading decided it (older traces write back as they
    were read)."""
    out = asdict(d)
    for key in ("reread", "reread_reply", "notes"):
        if not out.get(key):
            out.pop(key, None)
    return out
