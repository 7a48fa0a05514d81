"""A knowledge base's health from its own traces: per day, per version, the current window against the baseline,
drift alerts where a watched rate moves more than 15% — and none on an unchanged history."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.health import drift, health, reading, stats
from ragclinic.trace.store import add_feedback, save_trace
from ragclinic.types.findings import Symptom

DAY = 86400.0
NOW = 1_800_000_000.0
ANSWERED = "What is usually used as a proxy for the risk-free rate?"
REFUSED = "Who won the 1954 football world cup?"


@pytest.fixture
def kb(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    yield kb
    kb.close()


def _history(kb, days: list[tuple[int, int, int]], symptom_days=(), now: float = NOW):
    """Per day back from NOW: (days ago, answered questions, refused questions), each saved as a root trace
    created that day (a symptom on the days in ``symptom_days``)."""
    pipe = Pipeline(kb)
    _, good = pipe.ask(ANSWERED, save=False)
    _, bad = pipe.ask(REFUSED, save=False)
    assert good.final["route"] == "answer" and bad.final["refused"]
    k = 0
    for ago, n_good, n_bad in days:
        for i, t in enumerate([good] * n_good + [bad] * n_bad):
            k += 1
            sym = (Symptom("low_relevance", 0.9, "retrieve", ""),) if ago in symptom_days else ()
            save_trace(kb.db, replace(t, id=f"t{k:05d}", debug_round_id=f"t{k:05d}",
                                      created=now - ago * DAY + 60 * i, symptoms=sym))


def test_a_trace_reads_as_its_route_hit_relevance_time_and_ratings(kb):
    _history(kb, [(0, 1, 1)])
    add_feedback(kb.db, "t00001", {"rating": 1, "note": "", "created": NOW})
    rows = [reading(json.loads(d)) for (d,) in kb.db.conn.execute("SELECT data FROM traces ORDER BY id")]
    good, bad = rows
    assert good.route == "answer" and not good.refused and good.hit and good.top1 > 0.5 and good.ratings == (1,)
    assert bad.refused and bad.hit is False and good.ms > 0
    s = stats(rows)
    assert s["questions"] == 2 and s["answer_rate"] == 0.5 and s["refusal_rate"] == 0.5 and s["hit_rate"] == 0.5
    assert s["helpful_ratio"] == 1.0 and s["p50_ms"] <= s["p95_ms"]


def test_an_unchanged_history_raises_no_alert(kb):
    _history(kb, [(ago, 8, 2) for ago in range(8, -1, -1)])
    h = health(kb.db, now=NOW + 3600)
    assert h["current"]["questions"] == 10 and h["baseline"]["questions"] == 70
    assert h["alerts"] == [] and {c["metric"] for c in h["drift"]} >= {"hit_rate", "top1_relevance", "refusal_rate"}
    assert len(h["by_day"]) == 9 and all(d["refusal_rate"] == 0.2 for d in h["by_day"])
    assert all(abs(c["z"]) < 2 for c in h["drift"])
    assert [v["kb_version"] for v in h["by_version"]] == [kb.db.version]


def test_a_regression_fires_within_one_window_with_the_rates_it_moved(kb):
    _history(kb, [(ago, 8, 2) for ago in range(8, 0, -1)] + [(0, 4, 6)], symptom_days={0})
    h = health(kb.db, now=NOW + 3600)
    moved = {a["metric"] for a in h["alerts"]}
    assert {"hit_rate", "refusal_rate", "symptom:low_relevance"} <= moved
    hit = next(a for a in h["alerts"] if a["metric"] == "hit_rate")
    assert hit["current"] == 0.4 and hit["baseline"] == 0.8 and hit["change"] == -0.5 and hit["z"] <= -2


def test_a_small_window_says_nothing_however_it_moved(kb):
    _history(kb, [(ago, 8, 2) for ago in range(8, 0, -1)] + [(0, 1, 4)])
    h = health(kb.db, now=NOW + 3600)
    assert h["current"]["questions"] == 5 and h["alerts"] == []


def test_drift_needs_a_relative_change_beyond_15_percent_and_two_standard_errors():
    cur = {"questions": 200, "scored": 200, "hit_rate": 0.7, "top1_relevance": 0.6, "top1_sd": 0.2, "top1_n": 200,
           "refusal_rate": 0.2, "symptoms": {"a": 0.15, "b": 0.05}}
    base = {"questions": 1000, "scored": 1000, "hit_rate": 0.8, "top1_relevance": 0.6, "top1_sd": 0.2,
            "top1_n": 1000, "refusal_rate": 0.1, "symptoms": {"a": 0.05, "b": 0.0}}
    got = {c["metric"]: c["alert"] for c in drift(cur, base)}
    assert got == {"hit_rate": False, "top1_relevance": False, "refusal_rate": True, "symptom:a": True,
                   "symptom:b": False}  # -12.5% is within 15%; +100% is not; b is under the 10% floor
    few = {**cur, "questions": 12, "scored": 12, "top1_n": 12}  # +100% on 12 questions: within the noise
    assert {c["metric"]: c["alert"] for c in drift(few, base)}["refusal_rate"] is False


def test_kb_health_cli_json_and_sparklines(kb):
    import time

    _history(kb, [(ago, 8, 2) for ago in range(3, -1, -1)], now=time.time() - 7200)
    r = CliRunner().invoke(app, ["kb", "health", "--kb", str(kb.folder), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert {"current", "baseline", "drift", "alerts", "by_day", "by_version"} <= set(data)
    assert sum(d["questions"] for d in data["by_day"]) == 40 and data["current"]["questions"] == 10
    assert data["baseline"]["questions"] == 30 and data["alerts"] == []
    text = CliRunner().invoke(app, ["kb", "health", "--kb", str(kb.folder)])
    assert text.exit_code == 0, text.output
    assert "hit rate" in text.output and "top-1 relevance" in text.output and "no drift" in text.output
    assert any(ch in text.output for ch in "▁▂▃▄▅▆▇█")


def test_a_baseline_of_zero_gives_no_infinity_in_the_json():
    cur = {"questions": 50, "scored": 50, "hit_rate": 0.9, "top1_relevance": 0.6, "top1_sd": 0.0, "top1_n": 50,
           "refusal_rate": 0.2, "symptoms": {}}
    base = {**cur, "questions": 300, "scored": 300, "top1_n": 300, "refusal_rate": 0.0, "top1_relevance": 0.5}
    checks = {c["metric"]: c for c in drift(cur, base)}
    assert checks["refusal_rate"]["change"] is None and checks["refusal_rate"]["alert"]
    assert checks["top1_relevance"]["z"] is None  # no spread in either window: an infinite score, not exported
    json.dumps(checks, allow_nan=False)
