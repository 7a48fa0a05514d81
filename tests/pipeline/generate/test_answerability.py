"""The answerability combiner where the decision is made (issue 36): a short answer the model gave is refused when
the probe's reading of its hidden state, the verifier and the constraint checks together say the sources do not
hold the answer; the trace records each part; a frozen replay decides the same; no probe reading, no change."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from helpers import build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.store import load_trace
from ragclinic.verify.probe import AnswerabilityProbe

DOCS = {"bonds.md": "# Bonds\n\nDuration measures how much a bond price moves when interest rates change.\n",
        "coupon.md": "# Coupons\n\nThe coupon is the yearly interest a bond pays, as a share of its face value.\n"}


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """p(unanswerable) = sigmoid(h[0]) at layer 18; the combiner weighs the probe alone, threshold 0.9."""
    f = tmp_path / "probe.npz"
    np.savez(f, w=np.array([1.0, 0.0], dtype=np.float32), b=np.float32(0), layer=np.int32(18),
             method=np.array("meandiff"), model=np.array("fake-scripted"),
             combine_w=np.array([1.0, 0.0, 0.0], dtype=np.float32), combine_b=np.float32(0),
             threshold=np.float32(0.9))
    p = AnswerabilityProbe(f, hashlib.sha256(f.read_bytes()).hexdigest(), "fake-scripted")
    monkeypatch.setattr("ragclinic.pipeline.generate.probe_for", lambda name, model_id: p)
    return p


def _lm(unsure_about: str):
    """Answers every question from [1]; its 'hidden state' says unanswerable when the question names ``unsure_about``."""
    def hidden(messages, layers):
        q = re.search(r"Question: (.*)", messages[-1].content).group(1)
        return {n: np.array([4.0 if unsure_about in q else -4.0, 0.0], dtype=np.float32) for n in layers}
    return ScriptedLanguageModel(['{"status": "answered", "answer": "how much a bond price moves", "evidence": [1]}'],
                                 yes_prob=0.9, hidden_state=hidden)


def test_an_answer_the_combiner_calls_unanswerable_is_refused_with_its_parts(tmp_path, probe):
    kb = build_kb(tmp_path, DOCS, answer_probe=True, judge="learned")
    state, trace = Pipeline(kb, lm=_lm("convexity")).ask("What does bond convexity measure?")
    a = state.answer
    assert a.refused and a.route == "refuse" and a.citations == ()
    flag = next(f for f in a.flags if f.startswith("probe_unanswerable:"))
    assert "probe 0.98 unanswerable at layer 18" in flag and "verifier" in flag
    out = next(s for s in trace.spans if s.layer == "generate").outputs
    assert out["answerability"]["unanswerable"] and out["answerability"]["layer"] == 18
    assert out["unsupported_draft"]["text"].startswith("how much a bond price moves")
    # the hidden state was recorded with the call: a frozen replay refuses the same way, without the model
    again, _ = Pipeline(kb, lm=None).rerun(load_trace(kb.db, trace.id), "generate", frozen=True)
    assert again.answer.refused and any(f.startswith("probe_unanswerable:") for f in again.answer.flags)
    kb.close()


def test_an_answer_the_combiner_accepts_stands_and_its_parts_are_recorded(tmp_path, probe):
    kb = build_kb(tmp_path, DOCS, answer_probe=True, judge="learned")
    state, trace = Pipeline(kb, lm=_lm("convexity")).ask("What does bond duration measure?")
    assert state.answer.route == "answer" and not state.answer.refused
    assert not any(f.startswith("probe_unanswerable") for f in state.answer.flags)
    out = next(s for s in trace.spans if s.layer == "generate").outputs
    assert out["answerability"]["unanswerable"] is False and out["answerability"]["probe"] < 0.05
    kb.close()


def test_without_the_setting_or_a_reading_nothing_changes(tmp_path, probe):
    # the answer itself may be refused (convexity asked, duration stated: issue 55's subject check); the probe
    # must not act
    kb = build_kb(tmp_path, DOCS)  # answer_probe off: no hidden state asked for, no verdict
    lm = _lm("convexity")
    state, trace = Pipeline(kb, lm=lm).ask("What does bond convexity measure?")
    assert not any(f.startswith("probe_") for f in state.answer.flags)  # the probe did not act
    assert next(s for s in trace.spans if s.layer == "generate").outputs.get("answerability") is None
    kb.close()
    kb = build_kb(tmp_path / "c", DOCS, answer_probe=True)  # passages not scored by the learned verifier
    state, trace = Pipeline(kb, lm=_lm("convexity")).ask("What does bond convexity measure?")
    assert not any(f.startswith("probe_") for f in state.answer.flags)  # the probe did not act
    assert next(s for s in trace.spans if s.layer == "generate").outputs.get("answerability") is None
    kb.close()
    kb = build_kb(tmp_path / "d", DOCS, answer_probe=True, judge="learned", llm_field_decoding=False)
    state, trace = Pipeline(kb, lm=_lm("convexity")).ask("What does bond convexity measure?")  # another read position
    assert not any(f.startswith("probe_") for f in state.answer.flags)  # the probe did not act
    assert next(s for s in trace.spans if s.layer == "generate").outputs.get("answerability") is None
    kb.close()
    kb = build_kb(tmp_path / "b", DOCS, answer_probe=True, judge="learned")  # a backend without hidden state
    state, trace = Pipeline(kb, lm=ScriptedLanguageModel(
        ['{"status": "answered", "answer": "how much a bond price moves", "evidence": [1]}'], yes_prob=0.9)
    ).ask("What does bond convexity measure?")
    assert not any(f.startswith("probe_") for f in state.answer.flags)  # the probe did not act
    assert next(s for s in trace.spans if s.layer == "generate").outputs.get("answerability") is None
    kb.close()
