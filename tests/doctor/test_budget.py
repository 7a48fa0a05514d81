"""The doctor's budget: Budget / LimitedModel, and the limits an end-to-end Doctor run keeps."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.doctor import Doctor
from ragclinic.doctor import budget as budget_mod
from ragclinic.doctor.budget import Budget, BudgetExceeded, LimitedModel
from ragclinic.errors import RagclinicError
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.llm import Message
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.store import load_trace

MSG = [Message("user", "What is the risk-free rate?")]
Q = "What is the risk-free rate?"
# A structured answer (the generate layer's JSON schema) whose words are mostly in the passage (the rules are
# unsure), so the doctor's examination asks the judge, and its treatment (vote: two prompt variants) re-runs the
# generator and the judge: 5 extra calls unbounded.
REPLY = ('{"status": "answered", "answer": "The risk-free rate is the return on an investment with no default risk '
         'for analysts", "evidence": [1]}')


def _judge_prob(messages):
    # relevance questions pass the gate; support questions come back doubtful
    return 0.9 if "contain the answer" in messages[-1].content else 0.3


def fake_lm():
    return ScriptedLanguageModel([REPLY], yes_prob=_judge_prob)


@pytest.fixture(autouse=True)
def calibrated_fake(monkeypatch):
    """Treat the scripted model as a calibrated judge, so the doctor's judge tier spends budget."""
    from ragclinic.doctor.detectors import faithfulness

    monkeypatch.setitem(faithfulness.CALIBRATED_SUPPORT, "fake-scripted", (0.36, 0.5))


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("budget"), BOND_DOCS)
    yield kb
    kb.close()


# ------------------------------------------------------------------------------------------ unit
def test_limited_model_enforces_max_calls():
    lm = ScriptedLanguageModel(["hello"], yes_prob=0.7)
    b = Budget(max_rounds=2, max_calls=3, max_seconds=60)
    limited = LimitedModel(lm, b)
    assert limited.model_id == lm.model_id
    assert limited.chat(MSG, max_tokens=8).text == "hello"
    assert limited.next_token_probs(MSG, ["yes", "no"])["yes"] == pytest.approx(0.7)
    assert b.can_call()
    limited.chat(MSG, max_tokens=8)
    assert b.calls == 3 and not b.can_call()
    with pytest.raises(BudgetExceeded, match="doctor_max_lm_calls"):
        limited.chat(MSG, max_tokens=8)
    with pytest.raises(BudgetExceeded):
        limited.next_token_probs(MSG, ["yes", "no"])
    assert len(lm.calls) == 3  # the refused calls never reached the model
    assert b.calls == 3
    assert isinstance(BudgetExceeded("x"), RagclinicError)
    s = b.summary()
    assert s["lm_calls"] == 3 and s["max_lm_calls"] == 3 and s["max_rounds"] == 2


def test_limited_model_zero_budget_and_passthrough():
    lm = ScriptedLanguageModel(["hello"])
    limited = LimitedModel(lm, Budget(1, 0, 60))
    with pytest.raises(BudgetExceeded):
        limited.chat(MSG, max_tokens=8)
    assert lm.calls == []
    assert limited.replies == ["hello"]  # other attributes reach the wrapped model


def test_budget_runs_out_of_time(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(budget_mod.time, "monotonic", lambda: now[0])
    b = Budget(2, 10, max_seconds=5.0)
    lm = ScriptedLanguageModel(["hello"])
    limited = LimitedModel(lm, b)
    limited.chat(MSG, max_tokens=8)
    now[0] += 5.0
    assert b.out_of_time() and not b.can_call()
    with pytest.raises(BudgetExceeded, match="doctor_max_seconds"):
        limited.chat(MSG, max_tokens=8)
    assert len(lm.calls) == 1 and b.calls == 1


# ------------------------------------------------------------------------------------------ end to end
def _pipe(kb, lm, **settings):
    return Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=settings))


def _baseline_calls(kb) -> int:
    lm = fake_lm()
    _pipe(kb, lm).ask(Q)
    return len(lm.calls)


def test_unbounded_doctor_makes_extra_calls(kb):
    """The scenario is worth budgeting: with a generous budget the doctor makes many extra calls."""
    base = _baseline_calls(kb)
    lm = fake_lm()
    result = Doctor(_pipe(kb, lm, doctor_max_lm_calls=200)).ask(Q)
    extra = len(lm.calls) - base
    assert extra >= 5
    assert result.summary["lm_calls"] == extra
    assert any(c[0] == "chat" for c in lm.calls[base:])  # re-generations, not only judge calls


@pytest.mark.parametrize("n", [
    0,
    1,
    2, 3,
])
def test_doctor_extra_calls_never_exceed_the_budget(kb, n):
    base = _baseline_calls(kb)
    lm = fake_lm()
    result = Doctor(_pipe(kb, lm, doctor_max_lm_calls=n)).ask(Q)
    extra = len(lm.calls) - base
    assert extra <= n
    assert result.summary["lm_calls"] == extra and result.summary["max_lm_calls"] == n
    # the budget was binding here (the unbounded run needs more), and the doctor says so
    assert result.summary["outcome"] == "budget"
    # an answer always comes back, and the root trace records the run
    assert result.answer.text and load_trace(kb.db, result.trace.id).doctor["lm_calls"] == extra


def test_zero_rounds_means_no_repair(kb):
    base = _baseline_calls(kb)
    lm = fake_lm()
    result = Doctor(_pipe(kb, lm, doctor_max_rounds=0)).ask(Q)
    assert result.symptoms  # it still examined the answer …
    assert result.repairs == ()  # … but treated nothing
    assert [c for c in lm.calls[base:] if c[0] == "chat"] == []  # no re-generation
    assert result.summary["answer_trace_id"] == result.initial.trace_id == result.trace.id
    assert result.answer.text.startswith(result.initial.text)
    assert result.answer.citations == result.initial.citations
    assert load_trace(kb.db, result.trace.id).repairs == ()


def test_zero_rounds_extractive(kb):
    result = Doctor(Pipeline(kb, settings=kb.settings.model_copy(update={"doctor_max_rounds": 0}))).ask(
        "What is duration and what is the risk-free rate?")
    assert any(s["name"] == "compound" for s in result.symptoms)
    assert result.repairs == () and result.answer.text == result.initial.text
