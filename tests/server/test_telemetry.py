"""OpenTelemetry spans with the OpenInference conventions, caught by the SDK's in-memory exporter: a CHAIN root
per question, a span per layer (RETRIEVER with its documents, GUARDRAIL, EVALUATOR, CHAIN), LLM spans with token
counts, the doctor's symptoms and repairs; and no tracer at all when nothing is configured."""

from __future__ import annotations

import pytest

from .conftest import ADMIN, HOSTS, _reply, auth


@pytest.fixture(scope="module")
def traced(served, tmp_path_factory):
    from fastapi.testclient import TestClient
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys
    from ragclinic.server.telemetry import make_tracer

    exporter = InMemorySpanExporter()
    settings = served.app.state.rc.settings
    app = create_app(Settings.load(settings.kb, embedder="fake", judge="llm", cache_dir=settings.cache_dir,
                                   answer_cache=False, allowed_hosts=HOSTS),
                     Keys([ADMIN]), model=ScriptedLanguageModel([_reply], yes_prob=0.9), tracer=make_tracer(exporter=exporter))
    with TestClient(app) as client:
        yield client, exporter


def test_a_question_becomes_an_openinference_span_tree(traced):
    client, exporter = traced
    exporter.clear()
    body = client.post("/v1/ask", json={"question": "What is usually used as a proxy for the risk-free rate?"},
                       headers=auth(ADMIN)).json()
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    root = by_name["ragclinic.ask"]
    assert root.attributes["openinference.span.kind"] == "CHAIN" and root.parent is None
    assert root.attributes["input.value"].startswith("What is usually") and "treasury" in root.attributes["output.value"]
    assert root.attributes["session.id"] and root.attributes["ragclinic.trace_id"] == body["trace_id"]
    kinds = {s.name: s.attributes["openinference.span.kind"] for s in spans}
    assert kinds["layer:retrieve"] == "RETRIEVER" and kinds["layer:scope"] == "GUARDRAIL"
    assert kinds["layer:gate"] == "EVALUATOR" and kinds["layer:generate"] == "CHAIN"
    ret = by_name["layer:retrieve"].attributes
    assert "treasury bills" in " ".join(v for k, v in ret.items() if k.endswith(".document.content"))
    assert isinstance(ret["retrieval.documents.0.document.score"], float)
    llm = [s for s in spans if s.attributes["openinference.span.kind"] == "LLM"]
    assert llm and all(s.attributes["llm.token_count.prompt"] > 0 for s in llm)
    assert all(s.parent is not None and s.context.trace_id == root.context.trace_id for s in spans if s is not root)
    assert all(s.end_time >= s.start_time for s in spans)


def test_symptoms_and_repairs_are_spans_too():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragclinic.clinic import Consultation
    from ragclinic.server.telemetry import emit, make_tracer
    from ragclinic.trace.model import Span, Trace
    from ragclinic.types import Answer

    exporter = InMemorySpanExporter()
    t = Trace("t1", "r1", 1_800_000_000.0, "q?", {}, {}, 1, (Span("retrieve", "ok", 0.0, 2.0, {}, {"hits": []}),),
              (), {"answer": "a"})
    found = [{"name": "noisy_context", "score": 0.7, "layer": "scope", "evidence": "e"}]
    answer = Answer.from_json({"answer": "a", "route": "answer", "symptoms": found,
                               "repairs": [{"treatment": "filter_context", "accepted": True, "round": 1}]})
    emit(make_tracer(exporter=exporter), Consultation(answer, trace=t))
    kinds = {s.name: s.attributes["openinference.span.kind"] for s in exporter.get_finished_spans()}
    assert kinds["symptom:noisy_context"] == "EVALUATOR" and kinds["repair:filter_context"] == "CHAIN"


def test_no_tracer_without_an_exporter(monkeypatch, served):
    from ragclinic.server.telemetry import make_tracer, otlp_endpoint

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert otlp_endpoint() is None and make_tracer(otlp_endpoint()) is None
    assert served.app.state.rc.tracer is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert otlp_endpoint() == "http://127.0.0.1:4318" and make_tracer(otlp_endpoint()) is not None
