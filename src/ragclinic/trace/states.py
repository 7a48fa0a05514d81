"""The pipeline's state ⇄ a trace: the one codec every reader uses (the runner's re-runs, replay, the doctor,
the debugger's probes, ``Trace.state_after``).

A layer's span holds its outputs; the state after a layer is the request plus every earlier span's outputs.
A re-run that changed the state before restarting (a treatment filtering passages, a probe putting the gold
passage in, a changed gate decision) records the state it started from in a ``change`` span, so the child
trace replays to its own answer without its parent.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from ragclinic.errors import RagclinicError
from ragclinic.types import Scope
from ragclinic.types import AskRequest, AskState
from ragclinic.trace.codec import (conflict_from_dict, decision_from_dict, exclusion_from_dict, hit_from_dict,
                                   hit_to_dict, passage_from_dict, passage_to_dict)
from ragclinic.trace.model import CHANGE, QUERY_LAYERS, Span, Trace

_REQUEST_FIELDS = {f.name for f in fields(AskRequest)}
_TUPLES = {"scope_pairs", "search_queries", "sub_questions", "quarantine", "fusion_weights", "enforced", "conversation"}


def _check_layer(layer: str) -> None:
    if layer not in QUERY_LAYERS:
        raise RagclinicError(f"cannot start at layer {layer!r}; query layers: {', '.join(QUERY_LAYERS)}")


# ---------------------------------------------------------------------- requests
def request_to_dict(r: AskRequest) -> dict[str, Any]:
    d = {f.name: getattr(r, f.name) for f in fields(r) if f.name != "scope"}
    return json.loads(json.dumps(d))  # tuples → lists


def request_from_dict(d: dict[str, Any]) -> AskRequest:
    d = {k: tuple(tuple(x) if isinstance(x, list) else x for x in v) if k in _TUPLES else v
         for k, v in d.items() if k in _REQUEST_FIELDS and k != "scope"}
    enforced = tuple(d.get("enforced", ()))
    return AskRequest(**{**d, "scope": Scope.parse(dict(d.get("scope_pairs", ()))).require(enforced)})


def request_from_trace(trace: Trace) -> AskRequest:
    """The request a trace ran with (traces before the doctor stored only the plain pipeline's inputs)."""
    if trace.request:
        return request_from_dict({**trace.request, "scope_pairs": tuple(sorted(dict(trace.scope).items()))})
    from ragclinic.config import Settings

    def default(name: str):
        return trace.settings.get(name, Settings.model_fields[name].default)

    pairs = dict(trace.scope)
    r = trace.span("retrieve").inputs if trace.span("retrieve") else {}
    sc = trace.span("scope").inputs if trace.span("scope") else {}
    return AskRequest(trace.query, Scope.parse(pairs), tuple(sorted(pairs.items())), r.get("top_k", default("top_k")),
                      sc.get("context_k", default("context_k")), r.get("retriever", default("retriever")),
                      bool(r.get("rerank", default("rerank"))))


# ---------------------------------------------------------------------- whole states
def state_to_dict(state: AskState) -> dict[str, Any]:
    """Everything a layer reads (the answer is what generate makes, so it is not part of a starting state)."""
    return {"request": request_to_dict(state.request), "hits": [hit_to_dict(h) for h in state.hits],
            "allowed_chunks": state.allowed_chunks, "excluded": [asdict(e) for e in state.excluded],
            "passages": [passage_to_dict(p) for p in state.passages],
            "conflicts": [asdict(c) for c in state.conflicts],
            "decision": asdict(state.decision) if state.decision is not None else None, "draft": state.draft}


def state_from_dict(d: dict[str, Any]) -> AskState:
    return AskState(request_from_dict(d["request"]), hits=tuple(hit_from_dict(h) for h in d["hits"]),
                    allowed_chunks=d["allowed_chunks"], excluded=tuple(exclusion_from_dict(e) for e in d["excluded"]),
                    passages=tuple(passage_from_dict(p) for p in d["passages"]),
                    conflicts=tuple(conflict_from_dict(c) for c in d["conflicts"]),
                    decision=decision_from_dict(d["decision"]) if d["decision"] is not None else None,
                    draft=d["draft"])


def change_span(before: AskState, after: AskState, from_layer: str) -> Span:
    """The span a re-run writes when its ``change`` altered the state: what differs, and the state it starts from."""
    a, b = state_to_dict(before), state_to_dict(after)
    changed = sorted(k for k in a if a[k] != b[k] and k != "request")
    changed += sorted(f"request.{k}" for k in a["request"] if a["request"][k] != b["request"][k])
    return Span(CHANGE, "applied", 0.0, 0.0, {"from_layer": from_layer, "changed": changed}, {"state": b})


# ---------------------------------------------------------------------- from a trace
def apply_outputs(state: AskState, layer: str, o: dict[str, Any]) -> AskState:
    """The state after ``layer``, given the state before it and the layer's recorded outputs."""
    from dataclasses import replace

    if layer == "retrieve":
        extra = {"excluded": tuple(exclusion_from_dict(e) for e in o["excluded"])} if "excluded" in o else {}
        return replace(state, hits=tuple(hit_from_dict(h) for h in o["hits"]), allowed_chunks=o["allowed_chunks"],
                       **extra)
    if layer == "scope":
        return replace(state, passages=tuple(passage_from_dict(p) for p in o["passages"]),
                       conflicts=tuple(conflict_from_dict(c) for c in o["conflicts"]),
                       excluded=tuple(exclusion_from_dict(e) for e in o["excluded"]))
    if layer == "gate":
        return replace(state, decision=decision_from_dict(o["decision"]),
                       passages=tuple(passage_from_dict(p) for p in o["passages"]))
    if layer == "generate":
        from ragclinic.types import Answer

        return replace(state, answer=Answer.from_json(o["answer"]))
    raise RagclinicError(f"no state after layer {layer!r}")


def start_of(trace: Trace, layer: str) -> AskState:
    """The state ``trace`` had when ``layer`` started: a re-run's recorded starting state (its change span)
    when the layer is at or after the re-run's start, the request otherwise; then every layer's outputs
    from there to ``layer``."""
    _check_layer(layer)
    change = trace.span(CHANGE)
    if change is not None and QUERY_LAYERS.index(layer) >= QUERY_LAYERS.index(trace.rerun_from):
        state, begin = state_from_dict(change.outputs["state"]), trace.rerun_from
    else:
        state, begin = AskState(request_from_trace(trace)), "retrieve"
    for name in QUERY_LAYERS[QUERY_LAYERS.index(begin):QUERY_LAYERS.index(layer)]:
        span = trace.span(name)
        if span is None:
            raise RagclinicError(f"trace {trace.id} has no {name} span; re-run from an earlier layer")
        state = apply_outputs(state, name, span.outputs)
    return state


def state_after(trace: Trace, layer: str) -> AskState:
    """The state right after ``layer`` ran in ``trace`` (after generate: with the recorded answer)."""
    _check_layer(layer)
    state = start_of(trace, layer)
    span = trace.span(layer)
    if span is None:
        raise RagclinicError(f"trace {trace.id} has no {layer} span")
    return apply_outputs(state, layer, span.outputs)
