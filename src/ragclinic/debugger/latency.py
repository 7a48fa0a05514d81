"""The per-layer latency profile of a trace: time, share, model calls and tokens per layer, which layer
dominates, and what the doctor's or debugger's re-runs of it added."""

from __future__ import annotations

from typing import Any

from ragclinic.trace.model import ACTIVE, Trace


def latency_profile(trace: Trace, reruns: list[Trace] = ()) -> dict[str, Any]:
    total = sum(s.duration_ms for s in trace.spans if s.status != "replayed" and s.layer != ACTIVE) or 0.0
    layers = []
    for s in trace.spans:
        calls = [c for c in trace.model_calls if c.layer == s.layer]
        layers.append({"layer": s.layer, "status": s.status, "ms": round(s.duration_ms, 1),
                       "share": round(s.duration_ms / total, 4) if total else 0.0, "model_calls": len(calls),
                       "model_ms": round(sum(c.duration_ms for c in calls), 1),
                       "prompt_tokens": sum(c.prompt_tokens for c in calls),
                       "prompt_reused": sum(c.prompt_reused for c in calls),
                       "completion_tokens": sum(c.completion_tokens for c in calls)})
    dominant = max(layers, key=lambda r: r["ms"])["layer"] if layers else None
    out: dict[str, Any] = {"trace_id": trace.id, "question": trace.query, "total_ms": round(total, 1),
                           "dominant": dominant, "layers": layers, "model_calls": len(trace.model_calls),
                           "prompt_tokens": sum(c.prompt_tokens for c in trace.model_calls),
                           "prompt_reused": sum(c.prompt_reused for c in trace.model_calls),
                           "completion_tokens": sum(c.completion_tokens for c in trace.model_calls)}
    if reruns:
        out["reruns"] = {"traces": len(reruns), "ms": round(sum(t.total_ms for t in reruns), 1),
                         "model_calls": sum(len(t.model_calls) for t in reruns)}
    return out
