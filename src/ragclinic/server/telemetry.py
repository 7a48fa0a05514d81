"""OpenTelemetry spans for every answered question, with the OpenInference semantic conventions.

Each recorded Trace becomes a span tree after the answer: a CHAIN root (the question, the answer, the round id
as ``session.id``), one span per layer (retrieve: RETRIEVER with ``retrieval.documents.{i}.document.*``; a judge
rerank: RERANKER; scope: GUARDRAIL; gate: EVALUATOR; generate: CHAIN), an LLM span per model call (prompt and
completion token counts), an EVALUATOR span per symptom the doctor found and a CHAIN span per repair it tried.
Exported over OTLP only when ``--otlp-endpoint`` or the standard ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``
variables are set; otherwise the tracer is OpenTelemetry's no-op and nothing is built.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

from ragclinic.errors import ConfigError
from ragclinic.trace.layers import SPAN_KINDS

KIND = "openinference.span.kind"
_LAYER_KIND = SPAN_KINDS  # each layer's OpenInference kind, from the layer table (trace/layers.py)
_MAX_TEXT = 4000  # attribute values are truncated: a span is not a document store


def otlp_endpoint(flag: str | None = None) -> str | None:
    return flag or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")


def make_tracer(endpoint: str | None = None, *, exporter=None, service: str = "ragclinic"):
    """A tracer exporting to ``exporter`` (tests: an in-memory one) or over OTLP/HTTP to ``endpoint``; None
    when neither is configured (nothing is recorded, nothing costs)."""
    if exporter is None and not endpoint:
        return None
    from opentelemetry.sdk.resources import Resource  # on use: opentelemetry, the otel extra
    from opentelemetry.sdk.trace import TracerProvider  # on use: opentelemetry, the otel extra
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # on use: the otel extra

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # on use: the otel extra
        except ImportError:
            raise ConfigError("exporting spans needs the OTLP exporter: pip install -e '.[otel]'") from None
        url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return provider.get_tracer("ragclinic")


def emit(tracer, seen) -> None:
    """The span tree of one answered question (``seen``: its ``clinic.Consultation``, whose trace is the root)."""
    trace, a = seen.trace, seen.answer
    if tracer is None or trace is None:
        return
    from opentelemetry import trace as otel  # on use: opentelemetry, the otel extra

    t0 = int(trace.created * 1e9)
    end = t0 + int(max(trace.total_ms, 0.001) * 1e6)
    root = tracer.start_span("ragclinic.ask", start_time=t0, attributes={
        KIND: "CHAIN", "input.value": trace.query[:_MAX_TEXT], "output.value": a.text[:_MAX_TEXT],
        "session.id": trace.debug_round_id, "ragclinic.trace_id": trace.id, "ragclinic.route": a.route,
        "metadata": json.dumps({"refused": a.refused, "confidence": a.confidence})})
    ctx = otel.set_span_in_context(root)
    for span in trace.spans:
        _layer(tracer, ctx, trace, span, t0)
    for x in a.symptoms:
        s = tracer.start_span(f"symptom:{x.get('name')}", context=ctx, start_time=end, attributes={
            KIND: "EVALUATOR", "output.value": str(x.get("evidence", ""))[:_MAX_TEXT],
            "ragclinic.symptom.score": float(x.get("score", 0.0)), "ragclinic.symptom.layer": x.get("layer", "")})
        s.end(end_time=end)
    for r in a.repairs:
        s = tracer.start_span(f"repair:{r.get('treatment')}", context=ctx, start_time=end, attributes={
            KIND: "CHAIN", "input.value": str(r.get("change", ""))[:_MAX_TEXT],
            "output.value": str(r.get("reason", ""))[:_MAX_TEXT], "ragclinic.repair.accepted": bool(r.get("accepted")),
            "ragclinic.repair.round": int(r.get("round", 0))})
        s.end(end_time=end)
    root.end(end_time=end)


def _layer(tracer, ctx, trace, span, t0: int) -> None:
    from opentelemetry import trace as otel  # on use: opentelemetry, the otel extra

    start = t0 + int(span.started_ms * 1e6)
    attrs: dict[str, Any] = {KIND: _LAYER_KIND.get(span.layer, "CHAIN"), "ragclinic.layer": span.layer,
                             "ragclinic.status": span.status}
    o = span.output  # typed (trace/views.py); None for a span that ended in an error
    if span.layer == "retrieve":
        attrs["input.value"] = trace.query[:_MAX_TEXT]
        for i, h in enumerate(o.hits if o is not None else ()):
            pre = f"retrieval.documents.{i}.document"
            attrs[f"{pre}.id"] = h.chunk.id
            attrs[f"{pre}.content"] = h.chunk.text[:_MAX_TEXT]
            attrs[f"{pre}.score"] = float(h.score)
    elif span.layer == "gate" and o is not None:
        attrs["output.value"] = json.dumps(asdict(o.decision), ensure_ascii=False)[:_MAX_TEXT]
    elif span.layer == "generate" and o is not None:
        attrs["output.value"] = o.answer.text[:_MAX_TEXT]
    s = tracer.start_span(f"layer:{span.layer}", context=ctx, start_time=start, attributes=attrs)
    inner = otel.set_span_in_context(s)
    if span.layer == "retrieve" and o is not None and o.rerank:
        r = tracer.start_span("rerank", context=inner, start_time=start, attributes={KIND: "RERANKER"})
        r.end(end_time=start + int(span.duration_ms * 1e6))
    at = start
    for call in trace.model_calls if span.status != "replayed" else ():
        if call.layer == span.layer:  # one after the other, as they ran
            _llm(tracer, inner, call, at)
            at += int(call.duration_ms * 1e6)
    s.end(end_time=start + int(span.duration_ms * 1e6))


def _llm(tracer, ctx, call, start: int) -> None:
    prompt = "\n\n".join(m.get("content", "") for m in call.messages)
    s = tracer.start_span(f"llm:{call.kind}", context=ctx, start_time=start, attributes={
        KIND: "LLM", "llm.model_name": call.model_id, "input.value": prompt[-_MAX_TEXT:],
        "output.value": (call.output if isinstance(call.output, str) else json.dumps(call.output))[:_MAX_TEXT],
        "llm.token_count.prompt": int(call.prompt_tokens), "llm.token_count.completion": int(call.completion_tokens),
        "llm.token_count.total": int(call.prompt_tokens + call.completion_tokens)})
    s.end(end_time=start + int(call.duration_ms * 1e6))
