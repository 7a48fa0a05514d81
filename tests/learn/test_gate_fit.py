"""The gate's threshold fitted on the KB's own learned questions (issue 53 item 3): answerable cases (the question's
chunk in the context) against unanswerable-by-construction ones (the chunk and its neighbours removed), kept only
when it beats the shipped threshold on the held-out half; the pipeline then uses it."""

from __future__ import annotations

import pytest

from helpers import build_kb
from ragclinic.learn import gate_fit
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.store import learned as store
from ragclinic.wiring import pipeline

TOPICS = ["backup", "restore", "vacuum", "index", "replica", "role", "schema", "tablespace"]


class CodeJudge:
    """Says a passage answers when it holds the question's code word (what a good verifier would see); its
    shipped threshold is far too low for this KB, as the encyclopaedic one is for same-topic manuals."""

    model_id = "code-judge"
    cheap = True

    def __init__(self, shipped: float) -> None:
        self.relevance_threshold = shipped

    def judge(self, task, passage, text):
        code = text.split()[-1].strip("?")
        return 0.92 if code in passage else 0.35


def _kb(tmp_path):
    docs = {}
    for i in range(48):
        topic = TOPICS[i % len(TOPICS)]
        docs[f"d{i}.md"] = (f"# {topic} notes {i}\n\nThe {topic} procedure in this manual is described step by step, "
                            f"with the {topic} options and their defaults. Code zq{i}x.\n")
    kb = build_kb(tmp_path, docs)
    rows = kb.db.conn.execute("SELECT c.chunk_id, c.doc_id, c.text FROM chunks c").fetchall()
    with kb.db.transaction():
        for chunk_id, doc_id, text in rows:
            code = next(w for w in text.split() if w.startswith("zq")).rstrip(".")
            topic = text.split()[1]
            q = f"How do I run the {topic} procedure with code {code}?"
            store.write(kb.db.conn, store.Learned(chunk_id, doc_id, "fake", 0.0, 0, 0, "ok",
                                                  (store.Item("question", q, True, 1),)))
        kb.db.set_meta("learned_version", "1")
    return kb


def test_a_threshold_that_refuses_same_topic_contexts_is_kept_and_the_pipeline_uses_it(tmp_path):
    kb = _kb(tmp_path)
    res = gate_fit.fit(kb, CodeJudge(0.2), create_retriever(kb), kb.settings)
    assert res.cases == 48 and res.auroc == 1.0
    assert res.test["shipped"]["refusal"] == 0.0 and res.test["fitted"]["refusal"] == 1.0
    assert res.test["fitted"]["over_refusal"] == 0.0 and res.kept and 0.35 < res.threshold <= 0.92
    assert pipeline(kb).settings.gate_threshold_judge is None  # off by default (learned_gate)
    on = kb.settings.model_copy(update={"learned_gate": True})
    assert gate_fit.calibrated(kb, on).gate_threshold_judge == res.threshold
    assert pipeline(kb, settings=kb.settings).settings.gate_threshold_judge is None  # a trace's settings stand
    kb.close()


def test_a_threshold_that_does_not_beat_the_shipped_one_is_not_used(tmp_path):
    kb = _kb(tmp_path)
    res = gate_fit.fit(kb, CodeJudge(0.9), create_retriever(kb), kb.settings)  # the shipped one already refuses them
    assert not res.kept and "not kept" in res.why
    assert gate_fit.calibrated(kb, kb.settings.model_copy(update={"learned_gate": True})).gate_threshold_judge is None
    kb.close()


@pytest.mark.parametrize("override", [{"learned_gate": False}, {"gate_threshold_judge": 0.3}])
def test_the_user_setting_wins_over_the_learned_threshold(tmp_path, override):
    kb = _kb(tmp_path)
    assert gate_fit.fit(kb, CodeJudge(0.2), create_retriever(kb), kb.settings).kept
    s = gate_fit.calibrated(kb, kb.settings.model_copy(update=override))
    assert s.gate_threshold_judge == override.get("gate_threshold_judge")
    kb.close()
