"""`ragclinic diagnose` through typer's runner: the JSON contract, --latency, --from-eval, bad usage."""

from __future__ import annotations

import json

import pytest
from helpers import BOND_DOCS, build_kb
from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.debugger import LAYERS


@pytest.fixture
def kb_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    build_kb(tmp_path, BOND_DOCS, {"duration.md": {"year": "2019"}}).close()
    return str(tmp_path / "kb")


def test_json_contract(kb_dir):
    r = CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--llm", "none", "--question",
                                 "What measures how much a bond price moves?", "--scope", "year=2020",
                                 "--expected", "duration", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["verdict"] == "scope" and set(d["layers"]) == set(LAYERS)
    assert all(v["status"] in ("ok", "fault", "not_reached") and "evidence" in v for v in d["layers"].values())
    assert "year=2020" in d["suggestion"] and d["trace_id"]
    # the same trace diagnosed again by id, with the expectation only
    again = CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--llm", "none", "--trace", d["trace_id"],
                                     "--expected", "duration", "--json"])
    assert json.loads(again.stdout)["verdict"] == "scope"
    table = CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--llm", "none", "--trace", d["trace_id"],
                                     "--expected", "duration"])
    assert "verdict: scope" in table.stdout and "fix:" in table.stdout


def test_latency_profile(kb_dir):
    r = CliRunner().invoke(app, ["ask", "What is duration?", "--kb", kb_dir, "--llm", "none", "--json"])
    tid = json.loads(r.stdout)["trace_id"]
    p = json.loads(CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--latency", tid, "--json"]).stdout)
    assert [x["layer"] for x in p["layers"]] == ["retrieve", "scope", "gate", "generate"]
    assert p["dominant"] in ("retrieve", "scope", "gate", "generate") and p["total_ms"] > 0
    assert abs(sum(x["share"] for x in p["layers"]) - 1) < 0.01
    text = CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--latency", tid]).stdout
    assert "dominant layer" in text


def test_from_eval_counts_faults_per_layer(tmp_path, monkeypatch):
    from eval.test_rag_task import ITEM, NEG, POS

    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "rgb.jsonl"
    # without the question's 第六届: its negative passages (第七届) would break that constraint and be refused,
    # and this test needs a case the extractive answer gets wrong
    f.write_text(json.dumps({"id": 0, "query": ITEM.question.replace("第六届", ""), "answer": "70", "positive": list(POS),
                             "negative": list(NEG)}, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "none", "--no-doctor", "--json",
                                 "--noise", "0.4,neg", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = CliRunner().invoke(app, ["diagnose", "--from-eval", str(out), "--llm", "none", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    failed = [json.loads(x) for x in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    failed = [x for x in failed if (not x["baseline"]["refused"]) == x["expect_refusal"] or
              (not x["expect_refusal"] and not x["baseline"]["correct"])]
    assert failed and d["failed"] == len(failed) and sum(d["faults"].values()) == len(failed)
    assert all(i["verdict"] in (*LAYERS, "none") for i in d["items"])
    assert set(d["examples"]) == set(d["faults"])
    # the run's report gains the faults per layer
    assert json.loads((out / "diagnosis.json").read_text(encoding="utf-8"))["failed"] == len(failed)
    assert "Where the failed items broke" in (out / "report.md").read_text(encoding="utf-8")
    assert (out / "faults_by_layer.png").stat().st_size > 1000


def test_bad_usage_exits_2(kb_dir, tmp_path):
    run = lambda *a: CliRunner().invoke(app, ["diagnose", "--kb", kb_dir, "--llm", "none", *a])  # noqa: E731
    assert run("--question", "q?").exit_code == 2  # no expectation
    assert run().exit_code == 2  # nothing to diagnose
    assert run("--question", "q?", "--trace", "x", "--expected", "a").exit_code == 2
    r = run("--from-eval", str(tmp_path / "nowhere"))
    assert r.exit_code == 2 and "items.jsonl" in r.output


def test_from_eval_diagnoses_the_answer_the_doctor_kept(tmp_path):
    from dataclasses import replace

    from ragclinic.eval.diagnose import diagnose_eval
    from ragclinic.pipeline.runner import Pipeline
    from ragclinic.trace.store import save_trace

    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        pipe = Pipeline(kb)
        q = "What measures how much a bond price moves when interest rates change?"
        _, root = pipe.ask(q)  # right: "Duration measures…"
        _, kept = pipe.rerun(root, "generate", change=lambda s: replace(s, draft="Convexity does [1]."))
        save_trace(kb.db, replace(root, doctor={"answer_trace_id": kept.id}))
    finally:
        kb.close()
    row = {"key": "q|default", "question": q, "expected": [["duration"]], "expect_refusal": False,
           "kb": str(tmp_path / "kb"), "baseline": {"correct": True, "refused": False, "trace_id": root.id},
           "doctor": {"correct": False, "refused": False, "trace_id": root.id}}
    (tmp_path / "items.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    d = diagnose_eval(tmp_path, "none")
    assert d["failed"] == 1 and d["items"][0]["trace_id"] == kept.id
    assert d["items"][0]["verdict"] == "generate"  # not "none": the kept answer is the wrong one
