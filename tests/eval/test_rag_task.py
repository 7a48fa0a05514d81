"""The rag task: case construction, the A/B runner on a fake model, resume after interruption, the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.eval.datasets import QAItem
from ragclinic.eval.tasks import rag
from ragclinic.eval.tasks.rag import ab_delta, arm_metrics, cases, run_rag
from ragclinic.models.fake_llm import ScriptedLanguageModel

POS = ("第六届立法会共有70个议席，经2016年9月4日的选举产生。", "全会70个议席花落谁家将有分晓。", "建制派在总共70个议席中获得41席。")
NEG = ("功能界别方面，传统功能界别为28个。", "立法会选举90个议席个个有竞争。", "第七届立法会由90名议员组成。",
       "每名选民投选1名候选人。", "香港特区第七届立法会选举选委会界别40个议席全部产生。")
ITEM = QAItem("0", "香港第六届立法会选举有多少个议席？", (("70",),), POS, NEG, ("第六届立法会共有170个议席。",), ("170",))


def rgb_file(tmp_path):
    """ITEM as a one-line RGB file."""
    f = tmp_path / "rgb.jsonl"
    f.write_text(json.dumps({"id": 0, "query": ITEM.question, "answer": "70", "positive": list(POS),
                             "negative": list(NEG), "positive_wrong": list(ITEM.counterfactual),
                             "fakeanswer": "170"}, ensure_ascii=False) + "\n", encoding="utf-8")
    return f


def test_cases_follow_the_noise_ratio():
    cs = {c.setting: c for c in cases([ITEM], ["0", "0.4", "0.8", "neg", "counterfactual"], seed=0)}
    assert sorted(len(set(c.documents) & set(NEG)) for c in cs.values()) == [0, 0, 2, 4, 5]
    assert set(cs["0"].documents) <= set(POS) and len(cs["0"].documents) == 3  # only 3 positives exist
    assert len(set(cs["0.4"].documents) & set(NEG)) == 2 and len(cs["0.4"].documents) == 5
    assert cs["neg"].expect_refusal and set(cs["neg"].documents) == set(NEG)
    assert "第六届立法会共有170个议席。" in cs["counterfactual"].documents
    few = QAItem("f", "q?", (("a",),), POS, NEG[:1], ())  # one negative: no 0.4, 0.8 or counterfactual case
    assert [c.setting for c in cases([few], ["0", "0.2", "0.4", "0.8", "neg", "counterfactual"], 0)] == ["0", "0.2", "neg"]
    plain = QAItem("u1", "q?", (("a",),), ("doc",))
    [c] = cases([plain], ["0.4", "neg"], seed=0)
    assert c.setting == "default" and c.documents == ("doc",)


def _lm():
    # relevance questions pass; the answer cites passage 1 and states 70 seats
    return ScriptedLanguageModel(["香港第六届立法会共有70个议席[1]。"], yes_prob=0.9)


def test_ab_runner_on_a_fake_model(tmp_path):
    todo = cases([ITEM], ["0.4", "neg"], seed=0)
    rows = run_rag(todo, _lm(), {"llm": "none"}, doctor=True)
    assert [r["setting"] for r in rows] == ["0.4", "neg"]
    for r in rows:
        assert r["baseline"]["lm_calls"] > 0 and r["doctor"]["lm_calls"] >= r["baseline"]["lm_calls"]
        assert r["baseline"]["trace_id"] and "outcome" in r
    base, doc = arm_metrics(rows, "baseline"), arm_metrics(rows, "doctor")
    assert base["accuracy"] == 1.0 and base["accuracy@0.4"] == 1.0
    assert base["refusal_accuracy"] == 0.0  # the fake model answers even from negatives
    # the prompt tokens are the plain run's (the doctor's re-runs are child traces); both arms stream
    assert set(doc) | {"p50_prompt_tokens", "p50_prompt_evaluated"} == set(base)
    assert 0 < base["p50_prompt_evaluated"] <= base["p50_prompt_tokens"] and base["p50_ttft_ms"] >= 0
    d = ab_delta(rows)
    assert d["accuracy"]["delta"] == doc["accuracy"] - base["accuracy"] and "p50_latency_ratio" in d


def test_a_killed_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    todo = cases([ITEM], ["0", "0.4", "neg"], seed=0)
    checkpoint = tmp_path / "items.jsonl"
    first = run_rag(todo[:2], _lm(), {"llm": "none"}, doctor=False, checkpoint=checkpoint)
    with open(checkpoint, "a", encoding="utf-8") as f:
        f.write('{"key": "0|neg", "trunc')  # the kill cut the third row mid-line
    ran = []
    real = rag.run_case
    monkeypatch.setattr(rag, "run_case", lambda case, *a, **k: ran.append(case.key) or real(case, *a, **k))
    rows = run_rag(todo, _lm(), {"llm": "none"}, doctor=False, checkpoint=checkpoint)
    assert ran == ["0|neg"]  # only the case without a complete row ran again
    assert [r["key"] for r in rows] == [c.key for c in todo]
    assert rows[:2] == first
    # the resumed row is on a line of its own: a second resume reads all three back and runs nothing
    ran.clear()
    again = run_rag(todo, _lm(), {"llm": "none"}, doctor=False, checkpoint=checkpoint)
    assert ran == [] and again == rows


def test_cli_ab_json_contract(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    f = rgb_file(tmp_path)
    r = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "none", "--ab", "--json",
                                 "--noise", "0.4,neg,counterfactual", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert {"baseline", "doctor", "delta"} <= set(data) and data["n"] == 3 and data["task"] == "rag"
    assert data["baseline"]["accuracy"] == pytest.approx(1.0)
    assert (tmp_path / "o" / "items.jsonl").read_text().count("\n") == 3
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "| accuracy |" in report and "![latency_cdf](latency_cdf.png)" in report
    assert (tmp_path / "o" / "latency_cdf.png").stat().st_size > 1000
    assert (tmp_path / "o" / "accuracy_vs_noise.png").exists()
    # each case's knowledge base is kept, so an item's trace opens from its row
    row = json.loads((tmp_path / "o" / "items.jsonl").read_text(encoding="utf-8").splitlines()[0])
    shown = CliRunner().invoke(app, ["trace", "show", row["doctor"]["trace_id"], "--kb", row["kb"], "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["query"] == ITEM.question
    bad = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "none", "--noise", "1.5"])
    assert bad.exit_code == 2 and "--noise" in bad.output
    # the checkpoint resumes only the run that wrote it
    other = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "none", "--ab", "--seed", "3",
                                     "--noise", "0.4,neg,counterfactual", "--out", str(tmp_path / "o")])
    assert other.exit_code == 2 and "another run" in other.output and "seed" in other.output


def test_items_without_documents_use_the_callers_kb(tmp_path):
    from helpers import BOND_DOCS, build_kb

    from ragclinic.eval.datasets import DatasetError

    item = QAItem("u1", "What is usually used as a proxy for the risk-free rate?", (("treasury bills",),))
    [case] = cases([item], ["0.4"], seed=0)
    with pytest.raises(DatasetError, match="--kb"):
        run_rag([case], None, {"llm": "none"}, doctor=False)
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        [row] = run_rag([case], None, {"llm": "none"}, doctor=True, shared_kb=kb)
    finally:
        kb.close()
    assert row["baseline"]["correct"] and row["doctor"]["correct"]
