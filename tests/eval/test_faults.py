"""The doctor task: fault construction, the ambiguous rewrite, the metrics against hand-counted rows, and the
CLI end to end on a fake model (rules catch an injected instruction whatever the model)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.eval.datasets import QAItem
from ragclinic.eval.tasks.faults import FAULTS, INJECTIONS, ambiguous_rewrite, fault_cases, fault_metrics
from ragclinic.text.support import content_terms

from .test_rag_task import ITEM, NEG, POS, rgb_file


def test_each_fault_is_built_as_described():
    cs = {c.setting: c for c in fault_cases([ITEM], list(FAULTS), seed=0)}
    assert set(cs) == set(FAULTS)
    assert set(cs["clean"].documents) == set(POS) and cs["clean"].asked == ITEM.question
    assert len(set(cs["noise"].documents) & set(POS)) == 1 and len(cs["noise"].documents) == 5
    assert cs["missing"].expect_refusal and set(cs["missing"].documents) <= set(NEG)
    assert set(ITEM.counterfactual) <= set(cs["counterfactual"].documents)
    assert sum(INJECTIONS["zh"] in d for d in cs["injected"].documents) == 1
    assert cs["ambiguous"].asked != ITEM.question and "它" in cs["ambiguous"].asked
    assert not any(c.expect_refusal for k, c in cs.items() if k != "missing")
    # an item without negatives or wrong passages carries only the faults it can
    plain = QAItem("p", "Who wrote the report?", (("Ann",),), ("Ann wrote the report.",))
    assert {c.setting for c in fault_cases([plain], list(FAULTS), 0)} == {"clean", "injected", "ambiguous"}
    with pytest.raises(ValueError, match="unknown fault"):
        fault_cases([ITEM], ["gremlins"], 0)


@pytest.mark.parametrize("question", ["香港第六届立法会选举有多少个议席？", "When was the Eiffel Tower in Paris completed?",
                                      "Who founded the Oberoi Group?"])
def test_ambiguous_rewrite_leaves_a_pronoun_and_at_most_one_term(question):
    q = ambiguous_rewrite(question)
    assert q and q != question and len(content_terms(q)) <= 1
    assert "它" in q or re.search(r"\bit\b", q)


def _row(fault, symptoms, base_ok, doc_ok, refusal=False):
    arm = lambda ok: {"correct": ok and not refusal, "refused": ok and refusal, "ms": 10.0 if ok == base_ok else 30.0,  # noqa: E731
                      "lm_calls": 2}
    return {"setting": fault, "symptoms": symptoms, "expect_refusal": refusal,
            "baseline": arm(base_ok), "doctor": {**arm(doc_ok), "ms": 20.0, "lm_calls": 5}}


def test_fault_metrics_against_hand_counts():
    rows = [_row("clean", [], True, True), _row("clean", ["injected_instruction"], True, False),
            _row("injected", ["injected_instruction"], False, True), _row("injected", [], False, False),
            _row("missing", ["low_relevance"], False, True, refusal=True)]
    m = fault_metrics(rows)
    inj = m["per_symptom"]["injected_instruction"]
    assert (inj["precision"], inj["recall"], inj["fired"]) == (0.5, 0.5, 2)  # 1 TP, 1 FP (clean), 1 FN
    assert m["per_symptom"]["low_relevance"] == {"precision": 1.0, "recall": 1.0, "fired": 1}
    assert m["confusion"]["clean"] == {"injected_instruction": 1} and m["confusion"]["injected"] == {
        "injected_instruction": 1}
    clean, injected = m["per_fault"]["clean"], m["per_fault"]["injected"]
    assert clean["false_alarm"] == 0.5 and clean["regression_rate"] == 0.5 and clean["repair_success"] is None
    assert injected["detected"] == 0.5 and injected["repair_success"] == 0.5 and injected["regression_rate"] is None
    assert m["per_fault"]["missing"]["doctor_ok"] == 1.0  # a refusal is right when evidence is missing
    assert injected["extra_lm_calls"] == 3 and m["overall"]["n"] == 5
    # a noise case is detected by either of its symptoms: the sibling that stayed quiet is not a miss
    noise = fault_metrics([_row("noise", ["noisy_context"], True, True), _row("noise", ["unsupported_claim"], True, True)])
    assert noise["per_symptom"]["noisy_context"]["recall"] == 0.5 and noise["per_symptom"]["low_relevance"]["recall"] == 0.0
    assert noise["per_symptom"]["unsupported_claim"]["precision"] is None  # not a fault's symptom: n/a


@pytest.mark.parametrize("question", ["Who directed the film Titanic?", "谁是《小时代》的作者？"])
def test_no_garbled_ambiguous_rewrite(question):
    assert ambiguous_rewrite(question) == ""


def test_cli_doctor_task_on_a_fake_model(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    f = rgb_file(tmp_path)
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["eval", "doctor", "--dataset", f"rgb:{f}", "--llm", "none", "--json",
                                 "--faults", "clean,injected,missing", "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["task"] == "doctor" and data["n"] == 3 and {"baseline", "doctor", "delta", "faults"} <= set(data)
    assert data["faults"]["per_fault"]["injected"]["detected"] == 1.0  # the rules catch the planted instruction
    assert data["faults"]["per_symptom"]["injected_instruction"]["precision"] == 1.0
    assert (out / "symptom_confusion.png").stat().st_size > 1000
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<table>" in html and "Per fault" in html and 'src="symptom_confusion.png"' in html
    bad = CliRunner().invoke(app, ["eval", "doctor", "--dataset", f"rgb:{f}", "--llm", "none", "--faults", "gremlins"])
    assert bad.exit_code == 2 and "--faults" in bad.output
