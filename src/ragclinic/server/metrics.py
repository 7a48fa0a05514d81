"""Prometheus metrics (base units, no high-cardinality labels: no questions, no trace ids, no tenants); the knowledge
base's health gauges (``ragclinic_kb_*``) read from its traces when scraped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client import CONTENT_TYPE_LATEST  # noqa: F401  (re-exported for the route)

from ragclinic.trace.layers import QUERY_LAYERS

log = logging.getLogger("ragclinic.server.metrics")
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

    def observe_answer(self, seen) -> None:
        """One answered request (a ``clinic.Consultation``): its outcome, its layers' durations, the doctor's
        findings."""
        a = seen.answer
        outcome = "cached" if seen.cached else {"refuse": "refused", "clarify": "clarified"}.get(a.route, "answered")
        self.answers.labels(outcome).inc()
        for s in getattr(seen.trace, "spans", ()) or ():
            if s.status == "ok" and s.layer in QUERY_LAYERS:  # the layer table's query layers (trace/layers.py)
                self.layer.labels(s.layer).observe(s.duration_ms / 1000)
        self.observe_doctor(a)

    def observe_doctor(self, answer) -> None:
        """The doctor's findings and treatments on an ``Answer`` (also a background repair's)."""
        for x in answer.symptoms:
            self.symptoms.labels(x.get("name", ""), x.get("layer", "")).inc()
        for r in answer.repairs:
            self.repairs.labels(r.get("treatment", ""), "true" if r.get("accepted") else "false").inc()

    def watch_health(self, source: Callable[[], dict], ttl: float = 60.0) -> None:
        """Export the knowledge base's health (trace/health.py: the current window and the baseline) as gauges,
        read from ``source`` at most once per ``ttl`` seconds of scrapes."""
        self.registry.register(HealthCollector(source, ttl))

    def text(self) -> bytes:
        return generate_latest(self.registry)


RATES = (("answer_rate", "Share of questions answered"), ("refusal_rate", "Share of questions refused"),
         ("hit_rate", "Share of questions whose retrieval brought a passage the gate scored as evidence"),
         ("top1_relevance", "Mean evidence score of the first passage"),
         ("helpful_ratio", "Share of ratings that said helpful"))


class HealthCollector:
    """``ragclinic_kb_*{window="current"|"baseline"}``: what `ragclinic kb health` shows, for the shipped alert
    rules (server/monitoring/alerts.yml) and dashboard. Computed from the traces at scrape time, cached ``ttl``."""

    def __init__(self, source: Callable[[], dict], ttl: float) -> None:
        self.source, self.ttl = source, ttl
        self._at, self._cached, self._lock = 0.0, None, threading.Lock()

    def describe(self):
        return []  # not read at registration: the traces are read only when scraped

    def _health(self) -> dict | None:
        """The health (cached ``ttl``); the last one read, or None, when reading fails — the other metrics are
        still served (a locked or damaged trace store must not take /metrics down)."""
        with self._lock:
            if self._cached is None or time.monotonic() - self._at > self.ttl:
                try:
                    self._cached = self.source()
                except Exception:  # noqa: BLE001 - logged; the scrape goes on without fresh health gauges
                    log.exception("the knowledge base's health could not be read for /metrics")
                self._at = time.monotonic()
            return self._cached

    def collect(self):
        h = self._health()
        if h is None:
            return
        windows = {"current": h["current"], "baseline": h["baseline"]}
        questions = GaugeMetricFamily("ragclinic_kb_questions", "Questions asked in the window", labels=["window"])
        for w, st in windows.items():
            questions.add_metric([w], st["questions"])
        yield questions
        for key, doc in RATES:
            g = GaugeMetricFamily(f"ragclinic_kb_{key}", doc, labels=["window"])
            for w, st in windows.items():
                if st.get(key) is not None:
                    g.add_metric([w], st[key])
            yield g
        lat = GaugeMetricFamily("ragclinic_kb_latency_seconds", "Answer time percentiles", labels=["window", "quantile"])
        sym = GaugeMetricFamily("ragclinic_kb_symptom_rate", "Share of questions with the symptom",
                                labels=["window", "symptom"])
        for w, st in windows.items():
            for q, key in (("0.5", "p50_ms"), ("0.95", "p95_ms")):
                if st.get(key) is not None:
                    lat.add_metric([w, q], st[key] / 1000)
            for name in sorted(set(h["current"]["symptoms"]) | set(h["baseline"]["symptoms"])):
                sym.add_metric([w, name], st["symptoms"].get(name, 0.0))
        yield lat
        yield sym
        z = GaugeMetricFamily("ragclinic_kb_drift_zscore", "Standard errors between the current window's rate and the "
                              "baseline's (two proportions; two means for top-1 relevance)", labels=["metric"])
        zs = GaugeMetricFamily("ragclinic_kb_symptom_zscore", "Standard errors between the current window's "
                               "symptom rate and the baseline's", labels=["symptom"])
        for c in h.get("drift", ()):
            if c.get("z") is None:  # an infinite score (nothing varied in either window) is not exported
                continue
            if c["metric"].startswith("symptom:"):
                zs.add_metric([c["metric"].split(":", 1)[1]], c["z"])
            else:
                z.add_metric([c["metric"]], c["z"])
        yield z
        yield zs
