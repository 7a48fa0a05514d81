"""The doctor's fast path: an answer whose best passage a verifier is sure of and whose every claim is supported
is not treated for context noise or retrieval reach; everything else is still treated."""

from __future__ import annotations

from helpers import BOND_DOCS, build_kb
from ragclinic.doctor import Doctor
from ragclinic.doctor.doctor import _SKIPPABLE
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline

Q = "What is usually used as a proxy for the risk-free rate?"
ANSWER = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."


def _doctor(kb, yes: float, **settings):
    lm = ScriptedLanguageModel([ANSWER], yes_prob=yes)
    return Doctor(Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=settings))), lm


def test_a_sure_supported_answer_is_not_treated_for_noise(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    doc, lm = _doctor(kb, 0.95)
    state, trace = doc.pipe.ask(Q)
    assert doc.confident(state).startswith("[")
    calls = len(lm.calls)
    result = doc.treat(state, trace)
    assert result.summary["outcome"] == "healthy" and not result.repairs
    assert "not treated: noisy_context" in result.summary["fast_path"]
    assert len(lm.calls) == calls  # no re-generation
    slow, _ = _doctor(kb, 0.95, doctor_fast_evidence=1.01)
    treated = slow.ask(Q)
    assert treated.summary["fast_path"] == "" and treated.repairs  # the same answer off the fast path is treated
    kb.close()


def test_unsure_evidence_or_an_unsupported_claim_is_not_the_fast_band(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    doc, _ = _doctor(kb, 0.7)
    state, _ = doc.pipe.ask(Q)
    assert doc.confident(state) == ""
    cat = Doctor(Pipeline(kb, lm=ScriptedLanguageModel(["The cat sat on the mat [1]."], yes_prob=0.95)))
    st, _ = cat.pipe.ask(Q)
    assert all(c.verdict == "supported" for c in st.answer.claims) == bool(cat.confident(st))
    kb.close()


def test_safety_symptoms_are_never_skipped():
    assert not _SKIPPABLE & {"injected_instruction", "conflicting_evidence", "false_premise", "unsupported_claim",
                             "contradicted_claim", "missing_aspect", "compound", "ambiguous", "off_topic"}
