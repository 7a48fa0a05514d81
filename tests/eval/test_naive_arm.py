"""The naive peer as an arm of `eval rag`: every passage in one prompt of the same model, on the same cases as
the pipeline's arms, with deltas against it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.eval.tasks.naive import MAX_TOKENS, naive_arm, naive_messages, refused
from ragclinic.eval.tasks.rag import ab_delta, arm_metrics, cases, run_rag
from ragclinic.models.fake_llm import ScriptedLanguageModel
from tests.eval.test_rag_task import ITEM, NEG, POS, rgb_file


def test_the_prompt_holds_every_passage_and_the_fixed_instruction_in_the_questions_language():
    en = naive_messages("Who won?", ["Alpha won.", "Beta lost."])
    assert en[0].content.startswith("Answer the question using only the documents.")
    assert "reply exactly: insufficient information." in en[0].content
    assert "Document 1: Alpha won." in en[1].content and "Document 2: Beta lost." in en[1].content
    zh = naive_messages(ITEM.question, list(POS))
    assert "信息不足" in zh[0].content and all(p in zh[1].content for p in POS) and ITEM.question in zh[1].content


def test_a_refusal_is_the_fixed_phrase_in_either_language():
    assert refused("Insufficient information.") and refused("信息不足。") and refused("  ")
    assert not refused("70 seats.")


def test_one_greedy_call_of_at_most_64_tokens_scored_like_the_other_arms():
    lm = ScriptedLanguageModel(["香港第六届立法会共有70个议席。"])
    row = naive_arm(lm, ITEM.question, POS, ITEM.answers, ITEM.fake_answers)
    assert row["correct"] and not row["refused"] and row["lm_calls"] == 1 and row["trace_id"] == ""
    [(kind, msgs)] = lm.calls
    assert kind == "chat" and len(msgs) == 2
    wrong = naive_arm(ScriptedLanguageModel(["共有170个议席。"]), ITEM.question, POS, ITEM.answers, ITEM.fake_answers)
    assert not wrong["correct"] and wrong["fake"]
    assert MAX_TOKENS == 64


def test_three_arms_on_the_same_cases_with_deltas_against_the_peer():
    # The peer answers 70 even from negative-only passages (never refuses); the pipeline's gate can.
    lm = ScriptedLanguageModel(["香港第六届立法会共有70个议席[1]。"], yes_prob=0.9)
    todo = cases([ITEM], ["0.4", "neg"], seed=0)
    rows = run_rag(todo, lm, {"llm": "none"}, doctor=True, arms=("naive", "baseline", "doctor"))
    for r in rows:
        assert r["naive"]["lm_calls"] == 1 and r["baseline"] and r["doctor"]
    peer = arm_metrics(rows, "naive")
    assert peer["accuracy"] == 1.0 and peer["refusal_accuracy"] == 0.0
    d = ab_delta(rows, 0, "naive", "baseline")
    assert d["accuracy"]["delta"] == arm_metrics(rows, "baseline")["accuracy"] - peer["accuracy"]
    only = run_rag(todo[:1], lm, {"llm": "none"}, doctor=False, arms=("naive",))
    assert only[0]["naive"] and only[0]["baseline"] is None and only[0]["doctor"] is None


def test_cli_arms_json_contract_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    f = rgb_file(tmp_path)
    r = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "fake", "--arms",
                                 "naive,plain,doctor", "--noise", "0.4,neg", "--json", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["mode"] == "arms" and data["arms"] == ["naive", "baseline", "doctor"]
    assert set(data["metrics"]) == {"naive", "baseline", "doctor"} and "accuracy" in data["delta"]
    assert set(data["delta_vs_naive"]) == {"baseline", "doctor"}
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "delta (baseline − naive peer)" in report and "| naive |" in report.replace("metric | naive", "| naive |")
    row = json.loads((tmp_path / "o" / "items.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert row["naive"]["answer"] == "I do not know." and not row["naive"]["correct"]
    for bad, msg in ((["--arms", "naive,magic"], "expected some of naive, plain, active, doctor"),
                     (["--arms", "naive", "--ab"], "--arms replaces --ab")):
        b = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "fake", *bad])
        assert b.exit_code == 2 and msg in b.output
    # the checkpoint of an --arms run does not resume an --ab run (its rows lack the baseline and doctor)
    other = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "fake", "--ab", "--noise",
                                     "0.4,neg", "--out", str(tmp_path / "o")])
    assert other.exit_code == 2 and "another run" in other.output and "arms" in other.output
    assert set(NEG)  # the fixture's negatives are what the neg case is built from


def test_the_active_retrieval_arm_runs_beside_the_plain_one_on_a_knowledge_base_of_its_own(tmp_path):
    from ragclinic.store.kb import KnowledgeBase
    from ragclinic.config import Settings
    from ragclinic.trace.model import ACTIVE
    from ragclinic.trace.store import load_trace

    lm = ScriptedLanguageModel(['{"status": "answered", "answer": "共有70个议席", "evidence": [1]}'], yes_prob=0.9,
                               token_prob=lambda w: 0.1)
    todo = cases([ITEM], ["0.4"], seed=0)
    rows = run_rag(todo, lm, {"llm": "fake", "active_retrieval": 0.5}, doctor=False, arms=("baseline", "active"),
                   checkpoint=tmp_path / "items.jsonl")
    (row,) = rows
    assert row["baseline"]["kb"] if "kb" in row["baseline"] else row["kb"]
    assert row["active"]["kb"] != row["kb"] and row["active"]["correct"] == row["baseline"]["correct"]
    kb = KnowledgeBase.open(Settings.load(row["active"]["kb"]))
    try:
        span = load_trace(kb.db, row["active"]["trace_id"]).span(ACTIVE)
        assert span is not None and span.output["threshold"] == 0.5 and span.output["triggered"]
    finally:
        kb.close()
    plain = KnowledgeBase.open(Settings.load(row["kb"]))
    try:
        assert load_trace(plain.db, row["baseline"]["trace_id"]).span(ACTIVE) is None  # the plain arm: off
    finally:
        plain.close()
    assert arm_metrics(rows, "active")["accuracy"] == arm_metrics(rows, "baseline")["accuracy"]
