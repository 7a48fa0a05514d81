"""The doctor's failure forecast (issue 37, part 1): its features come only from the state before generation, the
shipped heads are pinned, a knowledge base's own forecast (`ragclinic doctor train`) takes precedence, and the
doctor uses it — an answer it calls healthy is not re-run for noise or reach, a refusal it calls "not in the
knowledge base" gets no retrieval treatment, and the likeliest failure's treatment is tried first."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app
from ragclinic.doctor import Doctor, forecast
from ragclinic.doctor.forecast import FEATURES, KINDS, Forecast, Forecaster, features
from ragclinic.doctor.forecast_fit import fit
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Symptom
from ragclinic.verify.head import Head


@pytest.fixture(scope="module")
def bond_kb(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("forecast"), BOND_DOCS)
    yield kb
    kb.close()


def _file(kinds: dict[str, float]) -> dict:
    """A forecast file whose heads answer a constant probability per kind."""
    d = len(FEATURES)
    heads = {k: Head("logistic", np.zeros(d), np.ones(d), np.zeros(d), np.asarray(float(np.log(p / (1 - p))))).to_json()
             for k, p in kinds.items()}
    return {"version": 1, "features": list(FEATURES), "kinds": heads}


def test_features_read_only_what_the_pipeline_knows_before_it_generates(bond_kb):
    state, _ = Pipeline(bond_kb).ask("What is the risk-free rate?", save=False)
    x = features(state)
    assert x.shape == (len(FEATURES),) and np.isfinite(x).all()
    no_answer = replace(state, answer=None, draft=None)
    assert np.array_equal(features(no_answer), x)  # the answer is not an input
    row = dict(zip(FEATURES, x))
    assert row["support_max"] > 0 and row["n_passages"] >= 1 and row["zh"] == 0
    zh, _ = Pipeline(bond_kb).ask("无风险利率是什么？", save=False)
    assert dict(zip(FEATURES, features(zh)))["zh"] == 1


def test_the_shipped_forecast_is_pinned_and_reads_only_portable_features():
    assert forecast.SHIPPED.is_file() and len(forecast.SHIPPED_SHA256) == 64
    f = forecast.read(forecast.SHIPPED, forecast.SHIPPED_SHA256)
    # licensed questions give enough "not in the knowledge base" rows; their retrieval almost never misses (RESULTS)
    assert "insufficient_evidence" in f.heads and set(f.heads) <= set(KINDS)
    assert set(f.meta["used_features"]) == set(forecast.PORTABLE)
    for head in f.heads.values():  # no weight on a retriever's raw score or the question's surface
        assert all(w == 0 for name, w in zip(FEATURES, head.w1) if name not in forecast.PORTABLE)


def test_a_changed_file_is_refused_and_the_doctor_goes_on_without_it(tmp_path, monkeypatch, caplog):
    bad = tmp_path / "forecast-v1.json"
    bad.write_text(json.dumps(_file({"retrieval_miss": 0.5})))
    monkeypatch.setattr(forecast, "SHIPPED", bad)
    forecast._read_once.cache_clear()
    with pytest.raises(Exception, match="sha256"):
        forecast.read(bad, "0" * 64)
    assert forecast.load(None, "shipped") is None and "cannot be used" in caplog.text


def test_features_of_another_version_are_refused():
    with pytest.raises(Exception, match="refit it with `ragclinic doctor train"):
        Forecaster({"features": ["top1"], "kinds": {}}, "x")


def test_the_knowledge_bases_own_forecast_comes_first(tmp_path):
    (tmp_path / forecast.KB_FILE).write_text(json.dumps(_file({"retrieval_miss": 0.3})))
    got = forecast.load(tmp_path, "kb")
    assert got is not None and got.name.startswith("kb:forecast.json@")
    assert forecast.load(tmp_path, "shipped").name == got.name
    assert forecast.load(tmp_path / "elsewhere", "shipped").name == "forecast-v1"
    assert forecast.load(tmp_path / "elsewhere", "kb") is None  # the default: only a forecast measured on this KB
    assert forecast.load(tmp_path, "off") is None


def test_healthy_refusal_reach_and_order():
    from ragclinic.config import Settings

    s = Settings()
    low = Forecast((("retrieval_miss", 0.02), ("noisy_context", 0.03), ("insufficient_evidence", 0.05)), "m")
    assert forecast.healthy(low, 0.1).startswith("the forecast (m): retrieval miss 0.02")
    assert forecast.healthy(low, 0.04) == "" and forecast.healthy(Forecast((), "m"), 0.1) == ""
    # the fast path leaves misses and noise untreated: it needs a head for each of them, not just any low head
    assert forecast.healthy(Forecast((("insufficient_evidence", 0.01), ("conflict", 0.01)), "m"), 0.1) == ""
    assert forecast.refusal_reach(Forecast((("retrieval_miss", 0.7), ("insufficient_evidence", 0.9)), "m"), s) is True
    assert forecast.refusal_reach(Forecast((("retrieval_miss", 0.05), ("insufficient_evidence", 0.9)), "m"), s) is False
    assert forecast.refusal_reach(Forecast((("retrieval_miss", 0.3), ("insufficient_evidence", 0.5)), "m"), s) is None

    def sym(name):
        return Symptom(name, "x", 0.9, True, "")

    steps = [(sym("injected_instruction"), "quarantine"), (sym("low_relevance"), "prf"), (sym("noisy_context"), "filter"),
             (sym("unsupported_claim"), "refine")]
    noisy = Forecast((("retrieval_miss", 0.1), ("noisy_context", 0.8)), "m")
    assert [c for _, c in forecast.ordered(steps, noisy)] == ["quarantine", "filter", "refine", "prf"]
    assert forecast.ordered(steps, None) == steps


def test_the_doctor_skips_noise_and_reach_for_an_answer_the_forecast_calls_healthy(bond_kb, tmp_path):
    q = "What is the risk-free rate?"
    (bond_kb.folder / forecast.KB_FILE).write_text(json.dumps(_file({k: 0.01 for k in (
        "retrieval_miss", "noisy_context", "insufficient_evidence")})))
    try:
        result = Doctor(Pipeline(bond_kb)).ask(q)
        assert result.summary["forecast"]["model"].startswith("kb:") and result.summary["forecast"]["retrieval_miss"] == 0.01
        assert result.summary["fast_path"].startswith(("the forecast", "[")), result.summary
        assert not [r for r in result.repairs if r["symptom"] in ("noisy_context", "low_relevance", "term_mismatch")]
        off = Doctor(Pipeline(bond_kb, settings=bond_kb.settings.model_copy(update={"doctor_forecast": "off"}))).ask(q)
        assert "forecast" not in off.summary
        assert off.answer.text == result.answer.text  # a healthy answer either way
    finally:
        (bond_kb.folder / forecast.KB_FILE).unlink()


def test_a_refusal_the_forecast_places_outside_the_knowledge_base_gets_no_retrieval_treatment(bond_kb):
    q = "What is the boiling point of mercury?"
    (bond_kb.folder / forecast.KB_FILE).write_text(json.dumps(_file({"retrieval_miss": 0.01,
                                                                       "insufficient_evidence": 0.97})))
    try:
        result = Doctor(Pipeline(bond_kb)).ask(q)
        assert result.answer.refused
        assert result.summary["refusal"]["retrieval"] == "strong"
        assert result.summary["refusal"]["why"].startswith("the forecast")
        assert not [r for r in result.repairs if r["layer"] == "retrieve"]
    finally:
        (bond_kb.folder / forecast.KB_FILE).unlink()


def test_fit_learns_a_separable_kind_and_reports_held_out_auroc():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(300):
        y = int(i % 3 == 0)
        f = {name: float(rng.normal()) for name in FEATURES}
        f["support_max"] = float(rng.normal(-1.0 if y else 1.0, 0.7))
        rows.append({"features": f, "labels": {"insufficient_evidence": y}, "source": "s",
                     "split": ("train", "val", "test")[i % 5 % 3]})
    data, report = fit(rows)
    r = report["kinds"]["insufficient_evidence"]
    assert r["fitted"] and r["test_auroc"] > 0.85 and r["top_features"][0][0] == "support_max"
    assert report["kinds"]["conflict"] == {"fitted": False, "why": "no labelled rows"}
    head = Head.from_json(data["kinds"]["insufficient_evidence"])
    probs = head.prob(np.asarray([[r["features"][f] for f in FEATURES] for r in rows]))
    ys = np.asarray([r["labels"]["insufficient_evidence"] for r in rows])
    assert abs(probs.mean() - ys.mean()) < 0.1  # calibrated: the mean forecast near the base rate


def test_doctor_train_refits_from_the_knowledge_bases_history(tmp_path):
    import random

    rng = random.Random(3)
    names = ["".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3)).title() for _ in range(140)]
    held, away = names[:70], names[70:]
    docs = {f"n{i}.md": f"# {n}\n\n{n} was founded in {1900 + i} by a guild of weavers.\n" for i, n in enumerate(held)}
    kb = build_kb(tmp_path, docs)
    try:
        doc = Doctor(Pipeline(kb))
        for n in held:  # the history: 70 questions the knowledge base answers, 70 it cannot
            doc.ask(f"When was {n} founded?")
        for n in away:
            doc.ask(f"How tall is the lighthouse of {n}?")
    finally:
        kb.close()
    r = CliRunner().invoke(app, ["doctor", "train", "--kb", str(tmp_path / "kb"), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["rows"] == 140 and report["path"].endswith("forecast.json")
    kept = report["kinds"]["insufficient_evidence"]
    assert kept["fitted"] and kept["test_auroc"] >= 0.75, kept
    for kind, r in report["kinds"].items():  # a head is kept only when it ranks held-out history well
        assert r["fitted"] == (isinstance(r.get("test_auroc"), float) and r["test_auroc"] >= 0.75), (kind, r)
    written = json.loads((tmp_path / "kb" / forecast.KB_FILE).read_text())
    assert set(written["kinds"]) == {k for k, r in report["kinds"].items() if r["fitted"]}
    told = forecast.load(tmp_path / "kb", "kb")
    assert told.name.startswith("kb:")


def test_doctor_train_with_no_history_says_what_to_do(tmp_path):
    kb = build_kb(tmp_path, {"a.md": "# A\n\nSome text about bonds.\n"})
    kb.close()
    r = CliRunner().invoke(app, ["doctor", "train", "--kb", str(tmp_path / "kb")])
    assert r.exit_code == 2 and "ask questions with the doctor on first" in r.output


def test_doctor_train_that_keeps_no_head_removes_the_earlier_forecast(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        for q in ("What is the risk-free rate?", "What does duration measure?", "What is a treasury bill?"):
            Doctor(Pipeline(kb)).ask(q)
    finally:
        kb.close()
    stale = tmp_path / "kb" / forecast.KB_FILE
    stale.write_text(json.dumps(_file({"retrieval_miss": 0.01, "noisy_context": 0.01})))
    r = CliRunner().invoke(app, ["doctor", "train", "--kb", str(tmp_path / "kb"), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["path"] is None and report["removed"] == str(stale) and not stale.exists()
    assert forecast.load(tmp_path / "kb", "kb") is None
