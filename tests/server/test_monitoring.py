"""The monitoring that ships with `ragclinic serve`: the knowledge base's health as gauges at /metrics, the
Prometheus alert rules (checked and unit-tested with promtool) and the Grafana dashboard (its queries valid PromQL
over metric names the server exports)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import ragclinic.server
from ragclinic.server.metrics import Metrics
from ragclinic.trace.health import stats
from tests.server.conftest import ADMIN, auth

HERE = Path(ragclinic.server.__file__).parent / "monitoring"
Q = "What is usually used as a proxy for the risk-free rate?"


def _promtool() -> str:
    path = os.environ.get("RAGCLINIC_PROMTOOL") or shutil.which("promtool")
    if not path:
        pytest.fail("the alert-rule tests need promtool: apt-get install -y --no-install-recommends prometheus "
                    "(make install does it when run as root)")
    return path


def _exported_names() -> set[str]:
    """Every sample name the server's registry can export (histograms' _bucket/_sum/_count included), the health
    gauges with a knowledge base that has questions and symptoms."""
    m = Metrics()
    h = stats([])
    h.update(questions=3, hit_rate=0.5, top1_relevance=0.5, answer_rate=0.5, refusal_rate=0.5, helpful_ratio=1.0,
             p50_ms=10.0, p95_ms=20.0, symptoms={"low_relevance": 0.3})
    drift = [{"metric": "hit_rate", "z": -0.4}, {"metric": "symptom:low_relevance", "z": 0.3}]
    m.watch_health(lambda: {"current": h, "baseline": h, "drift": drift})
    m.http.labels("/v1/ask", "POST", "200").observe(1.0)
    m.layer.labels("generate").observe(1.0)
    m.answers.labels("answered").inc()
    m.repairs.labels("t", "true").inc()
    m.background.labels("improved").inc()
    return {s.name for fam in m.registry.collect() for s in fam.samples}


def _names_in(expr: str) -> set[str]:
    return set(re.findall(r"\bragclinic_[a-z0-9_]+", expr))


def test_the_alert_rules_are_valid_and_pass_their_unit_tests():
    tool = _promtool()
    check = subprocess.run([tool, "check", "rules", "alerts.yml"], cwd=HERE, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    test = subprocess.run([tool, "test", "rules", "alerts.test.yml"], cwd=HERE, capture_output=True, text=True)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


def test_the_rules_and_the_dashboard_name_only_metrics_the_server_exports(tmp_path):
    exported = _exported_names()
    rules = yaml.safe_load((HERE / "alerts.yml").read_text(encoding="utf-8"))
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dash = json.loads((HERE / "dashboard.json").read_text(encoding="utf-8"))
    panels = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(panels) >= 10 and {"hit_rate", "top1_relevance", "refusal_rate"} <= {
        k for e in panels for k in ("hit_rate", "top1_relevance", "refusal_rate") if f"ragclinic_kb_{k}" in e}
    for expr in exprs + panels:
        assert _names_in(expr) and _names_in(expr) <= exported, expr
    # each panel's query is valid PromQL: promtool parses it as a recording rule ($instance as a regex value)
    as_rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel_{i}", "expr": e.replace("$instance", ".*")} for i, e in enumerate(panels)]}]}
    (tmp_path / "dash.yml").write_text(yaml.safe_dump(as_rules), encoding="utf-8")
    check = subprocess.run([_promtool(), "check", "rules", str(tmp_path / "dash.yml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_metrics_export_the_knowledge_bases_health_by_window(served):
    for _ in range(2):
        served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ADMIN))
    text = served.get("/metrics", headers=auth(ADMIN)).text
    current = re.search(r'ragclinic_kb_questions\{window="current"\} (\d+)', text)
    assert current and int(current.group(1).split(".")[0]) >= 2
    for name in ("ragclinic_kb_answer_rate", "ragclinic_kb_refusal_rate", "ragclinic_kb_hit_rate",
                 "ragclinic_kb_top1_relevance"):
        assert re.search(name + r'\{window="current"\} [0-9.]+', text), name
    assert 'ragclinic_kb_latency_seconds{quantile="0.95",window="current"}' in text


def test_the_health_page_shows_the_windows_and_a_plot_to_admins_only(served):
    from tests.server.conftest import ACME

    served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ADMIN))
    r = served.get("/health", headers=auth(ADMIN))
    assert r.status_code == 200 and 'id="windows"' in r.text and "hit rate" in r.text and "/health/plot.png" in r.text
    png = served.get("/health/plot.png", headers=auth(ADMIN))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert served.get("/health", headers=auth(ACME)).status_code == 403
    assert served.get("/health/plot.png", headers=auth(ACME)).status_code == 403


def test_a_health_reading_that_fails_leaves_the_other_metrics_served():
    from prometheus_client import generate_latest

    m = Metrics()

    def broken():
        raise RuntimeError("database is locked")

    m.watch_health(broken)
    m.answers.labels("answered").inc()
    text = generate_latest(m.registry).decode()
    assert 'ragclinic_answers_total{outcome="answered"} 1.0' in text and "ragclinic_kb_" not in text
