"""`ragclinic eval` through typer's runner: retrieval on a small BEIR fixture, detection on a HaluEval one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app


@pytest.fixture
def runner(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGCLINIC_EMBEDDER", "fake")
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def _beir(root):
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": "Treasury bills are the usual proxy for the risk-free rate.",
            "d2": "Duration measures how much a bond price moves when rates change.",
            "d3": "The cat sat on the warm kitchen floor all afternoon."}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                               for k, v in docs.items()), encoding="utf-8")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "proxy for the risk-free rate"}) + "\n" +
                                        json.dumps({"_id": "q2", "text": "bond price duration"}) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n", encoding="utf-8")
    return root


def test_retrieval_json_contract(runner, tmp_path):
    root = _beir(tmp_path / "beir")
    r = runner.invoke(app, ["eval", "retrieval", "--dataset", f"beir:{root}", "--kb", str(tmp_path / "kb"),
                            "--json", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["task"] == "retrieval" and data["n"] == 2
    lexical = data["metrics"]["lexical"]
    assert lexical["nDCG@10"] == pytest.approx(1.0) and lexical["RR@10"] == pytest.approx(1.0)
    assert {"lexical", "dense", "hybrid"} <= set(data["metrics"])
    assert json.loads((tmp_path / "out" / "results.json").read_text())["n"] == 2
    # a second run over the same KB ingests nothing new and gives the same figures
    again = json.loads(runner.invoke(app, ["eval", "retrieval", "--dataset", f"beir:{root}", "--kb",
                                           str(tmp_path / "kb"), "--json"]).stdout)
    same = lambda m: {k: v for k, v in m.items() if k != "ms_per_query"}  # noqa: E731
    assert same(again["metrics"]["lexical"]) == same(lexical)


def test_detection_table_and_items(runner, tmp_path):
    f = tmp_path / "h.json"
    f.write_text("\n".join(json.dumps(r) for r in [
        {"knowledge": "The Oberoi Group has its head office in Delhi.", "question": "Where is the head office?",
         "right_answer": "Delhi", "hallucinated_answer": "Mumbai"},
        {"knowledge": "Arthur's Magazine was published from 1844.", "question": "When did it start?",
         "right_answer": "1844", "hallucinated_answer": "1901"},
        "{broken"]) + "\n", encoding="utf-8")
    r = runner.invoke(app, ["eval", "detection", "--dataset", f"halueval:{f}", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "detection · 4 items" in r.stdout and "skipped" in r.output
    items = [json.loads(x) for x in (tmp_path / "o" / "items.jsonl").read_text().splitlines()]
    assert [(i["hallucinated"], i["risk"] >= 0.5) for i in items] == [(False, False), (True, True)] * 2
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["metrics"]["unsupported_claim"]["balanced_accuracy"] == 1.0 and res["skipped_records"] == 1


def test_bad_usage_exits_2(runner, tmp_path):
    assert runner.invoke(app, ["eval", "nonsense", "--dataset", "jsonl:x"]).exit_code == 2
    h = tmp_path / "h.json"
    h.write_text(json.dumps({"knowledge": "k", "question": "q", "right_answer": "a", "hallucinated_answer": "b"}) + "\n")
    r = runner.invoke(app, ["eval", "doctor", "--dataset", f"halueval:{h}"])
    assert r.exit_code == 2 and "needs a qa dataset" in r.output
    r = runner.invoke(app, ["eval", "retrieval", "--dataset", f"jsonl:{tmp_path}/missing.jsonl"])
    assert r.exit_code == 2 and "no such file" in " ".join(r.output.split())


def test_retrieval_over_a_squad_set_finds_each_questions_paragraph(runner, tmp_path):
    f = tmp_path / "cmrc.json"
    paras = [("国债通常被用作无风险利率的近似。", "什么通常被用作无风险利率的近似？", "国债"),
             ("久期衡量债券价格对利率变化的敏感程度。", "什么衡量债券价格对利率变化的敏感程度？", "久期"),
             ("猫整个下午都睡在温暖的厨房地板上。", "猫下午睡在哪里？", "厨房地板")]
    f.write_text(json.dumps({"data": [{"paragraphs": [
        {"context": c, "qas": [{"id": f"q{i}", "question": q, "answers": [{"text": a}]}]}
        for i, (c, q, a) in enumerate(paras)]}]}, ensure_ascii=False), encoding="utf-8")
    r = runner.invoke(app, ["eval", "retrieval", "--dataset", f"squad:{f}", "--kb", str(tmp_path / "kb"), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["n"] == 3 and data["metrics"]["lexical"]["R@5"] == pytest.approx(1.0)
    assert data["metrics"]["lexical"]["RR@10"] == pytest.approx(1.0)
    assert (tmp_path / "kb-corpus" / "corpus.jsonl").read_text(encoding="utf-8").count("\n") == 3
