"""A refusal's care (issue 33 item 5): only a treatment that brings other passages, only when the first retrieval
was weak, one of them, within ``doctor_refusal_budget_s`` — so a refusal costs no more than an answer."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.doctor import Doctor
from ragclinic.doctor import budget as budget_mod
from ragclinic.doctor.budget import Budget, BudgetExceeded, LimitedModel
from ragclinic.doctor.refusal import RefusalCare, assess, select
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import Change
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.llm import Message
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import GateDecision

from .factories import make_answer, make_passage, make_state

ON_TOPIC = "What is the risk-free rate?"  # the bond passage holds every word of it
OFF_TOPIC = "What is the boiling point of mercury?"  # no passage holds its words


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("refusal"), BOND_DOCS)
    yield kb
    kb.close()


def _refusing_lm():
    # the judge says no passage contains the answer: the gate refuses whatever was retrieved
    return ScriptedLanguageModel(["The documents do not say."], yes_prob=0.05)


def _consult(kb, q, **overrides):
    base_lm = _refusing_lm()
    Pipeline(kb, lm=base_lm).ask(q)
    lm = _refusing_lm()
    result = Doctor(Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=overrides))).ask(q)
    return result, len(lm.calls) - len(base_lm.calls)


def test_a_refusal_with_strong_retrieval_triggers_no_rerun(kb):
    result, extra = _consult(kb, ON_TOPIC)
    assert result.initial.route == "refuse" and result.answer.route == "refuse"
    assert result.repairs == () and extra == 0 and result.summary["lm_calls"] == 0
    assert result.summary["refusal"]["retrieval"] == "strong"
    skipped = result.summary["skipped"]
    assert skipped and {x["treatment"] for x in skipped} >= {"prf_rewrite"}  # the rewrite that cannot help
    assert all(x["reason"].startswith("the first retrieval was strong") for x in skipped)
    assert result.summary["outcome"] == "refusal kept: no treatment can change it"
    assert result.trace.doctor["skipped"] == skipped  # the root trace says why too


def test_a_refusal_with_weak_retrieval_tries_one_retrieval_treatment(kb):
    result, _ = _consult(kb, OFF_TOPIC)
    assert result.initial.route == "refuse"
    assert result.summary["refusal"]["retrieval"] == "weak"
    assert len(result.repairs) == 1 and result.repairs[0]["layer"] == "retrieve"
    assert result.repairs[0]["after"] is not None  # it was re-run
    skipped = result.summary["skipped"]
    assert skipped and all(x["reason"] == "one retrieval treatment per refusal" for x in skipped)
    names = [x["treatment"] for x in skipped]
    assert len(names) == len(set(names)) and result.repairs[0]["treatment"] not in names


def test_the_refusal_budget_stops_treatments(kb):
    result, extra = _consult(kb, OFF_TOPIC, doctor_refusal_budget_s=1e-9)
    assert result.summary["max_seconds"] == 1e-9 and result.summary["outcome"] == "budget"
    assert [r["after"] for r in result.repairs] == [None] and extra == 0
    assert "budget" in result.repairs[0]["reason"]


def test_the_refusal_budget_is_the_smaller_of_the_two(kb):
    result, _ = _consult(kb, OFF_TOPIC, doctor_max_seconds=2.0, doctor_refusal_budget_s=30.0)
    assert result.summary["max_seconds"] == 2.0


def test_an_answer_keeps_the_doctors_whole_budget(kb):
    result = Doctor(Pipeline(kb)).ask(ON_TOPIC)  # extractive: the lexical gate answers
    assert result.answer.route == "answer"
    assert result.summary["max_seconds"] == kb.settings.doctor_max_seconds and "refusal" not in result.summary


def test_the_budget_names_the_setting_that_ran_out(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(budget_mod.time, "monotonic", lambda: now[0])
    b = Budget(2, 10, 5.0, "doctor_refusal_budget_s")
    now[0] += 5.0
    with pytest.raises(BudgetExceeded, match="doctor_refusal_budget_s"):
        LimitedModel(ScriptedLanguageModel(["x"]), b).chat([Message("user", "q")], max_tokens=4)


# ------------------------------------------------------------------------------------------ rules
def test_assess_strong_weak():
    p = make_passage(1, "The risk-free rate is the return on an investment with no default risk.", support=0.2)
    refused = make_answer("I can't answer this.", route="refuse")
    assert not assess(make_state("What is the risk-free rate?", [p], refused), 0.6).weak
    assert assess(make_state("What is the boiling point of mercury?", [p], refused), 0.6).weak
    assert assess(make_state("What is the risk-free rate?", [], refused), 0.6).weak
    assert assess(make_state("What is the risk-free rate?", [p], refused), 1.01).weak  # 1.01: always weak
    # the gate found the evidence sufficient and the generator declined: other passages change nothing
    declined = make_state("What is the boiling point of mercury?", [p], refused,
                          decision=GateDecision("answer", "factual", 0.84, "test"))
    care = assess(declined, 0.6)
    assert not care.weak and "generator declined" in care.why


def _change(name, layer, terminal=False):
    return Change(name, layer, f"{name} change", lambda s: s, terminal=terminal)


def test_select_keeps_one_retrieval_change_and_says_why_for_the_rest():
    sym = Symptom("low_relevance", 0.9, "retrieve", "weak")
    steps = [(sym, _change("vote", "generate")), (sym, _change("prf_rewrite", "retrieve")),
             (sym, _change("widen", "retrieve")), (sym, _change("clarify", "generate", terminal=True))]
    keep, skipped = select(steps, RefusalCare(True, "weak"), 0)
    assert [c.treatment for _, c in keep] == ["prf_rewrite", "clarify"]  # a question back costs no model call
    why = {x["treatment"]: x["reason"] for x in skipped}
    assert why["vote"].startswith("cannot change a refusal") and why["widen"] == "one retrieval treatment per refusal"
    keep, skipped = select(steps, RefusalCare(False, "strong"), 0)
    assert [c.treatment for _, c in keep] == ["clarify"] and len(skipped) == 3
    keep, _ = select(steps, RefusalCare(True, "weak"), 1)  # one was tried in an earlier round
    assert [c.treatment for _, c in keep] == ["clarify"]


def test_an_answer_withheld_for_a_broken_constraint_may_be_found_by_another_retrieval():
    """"The documents give 2020 for this; the question asks about 2021": the passages are about another year — a
    retrieval treatment can bring the asked year's passage, whatever the words' coverage says."""
    from dataclasses import replace

    p = make_passage(1, "The 2020 NBA Draft was held on November 18, 2020.", support=0.9)
    refused = replace(make_answer("The documents give 2020 for this; the question asks about 2021.", route="refuse"),
                      flags=("constraint_refused: the question asks about 2021; the answer rests on 2020",))
    state = make_state("When was the 2021 NBA Draft held?", [p], refused,
                       decision=GateDecision("answer", "factual", 0.9, "test"))
    care = assess(state, 0.6)
    assert care.weak and "constraint_refused" in care.why
