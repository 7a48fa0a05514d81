"""Prometheus metrics (base units, no high-cardinality labels: no questions, no trace ids, no tenants)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import CONTENT_TYPE_LATEST  # noqa: F401  (re-exported for the route)

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.http = Histogram("ragclinic_http_request_duration_seconds", "HTTP request duration",
                              ("route", "method", "status"), registry=r, buckets=_BUCKETS)
        self.layer = Histogram("ragclinic_layer_duration_seconds", "Pipeline layer duration", ("layer",),
                               registry=r, buckets=_BUCKETS)
        self.answers = Counter("ragclinic_answers_total", "Answers by outcome", ("outcome",), registry=r)
        self.symptoms = Counter("ragclinic_symptoms_total", "Symptoms the doctor found", ("symptom", "layer"),
                                registry=r)
        self.repairs = Counter("ragclinic_repairs_total", "Repairs the doctor tried", ("treatment", "accepted"),
                               registry=r)
        self.queue = Gauge("ragclinic_model_queue_depth", "Model calls waiting or running", registry=r)
        self.background = Counter("ragclinic_background_repairs_total", "Background repairs by outcome "
                                  "(improved, unchanged, dropped, skipped, failed)", ("outcome",), registry=r)
        self.repair_queue = Gauge("ragclinic_background_repair_queue_depth", "Answers waiting for the doctor",
                                  registry=r)

    def observe_answer(self, payload: dict, trace) -> None:
        """One answered request: its outcome, its layers' durations, the doctor's findings."""
        if payload.get("cached"):
            outcome = "cached"
        else:
            outcome = {"refuse": "refused", "clarify": "clarified"}.get(payload.get("route", ""), "answered")
        self.answers.labels(outcome).inc()
        for s in getattr(trace, "spans", ()) or ():
            if s.status == "ok" and s.layer in ("retrieve", "scope", "gate", "generate"):
                self.layer.labels(s.layer).observe(s.duration_ms / 1000)
        self.observe_doctor(payload)

    def observe_doctor(self, payload: dict) -> None:
        """The doctor's findings and treatments in an answer's payload (also a background repair's)."""
        for x in payload.get("symptoms", ()):
            self.symptoms.labels(x.get("name", ""), x.get("layer", "")).inc()
        for r in payload.get("repairs", ()):
            self.repairs.labels(r.get("treatment", ""), "true" if r.get("accepted") else "false").inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)
