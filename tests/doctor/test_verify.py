"""Verified confidence, the accept-only-if-better rule, and the doctor keeping the initial answer when a
treatment makes it worse."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.doctor import Doctor, router
from ragclinic.types import Symptom
from ragclinic.doctor.treatments import TREATMENTS, Change
from ragclinic.doctor.verify import judge_better, present, verified_confidence
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.store import load_trace
from ragclinic.types import Answer, Claim

T, MARGIN = 0.5, 0.02


def _answer(verdicts, route="answer"):
    claims = tuple(Claim(f"claim {i}", (1,), v, 1.0 if v == "supported" else 0.2) for i, v in enumerate(verdicts))
    return Answer("text", route, "factual", route == "refuse", (), claims, 0.5, "extractive")


def sym(name, score=0.9):
    return Symptom(name, score, "generate", "test")


SUPPORTED = _answer(["supported", "supported"])
REFUSAL = _answer([], route="refuse")
UNSUPPORTED = _answer(["unsupported", "unsupported"])


def test_supported_beats_refusal_beats_unsupported():
    good = verified_confidence(SUPPORTED, 0.9, [], T)
    refusal = verified_confidence(REFUSAL, 0.1, [], T)  # honest: the evidence is weak
    bad = verified_confidence(UNSUPPORTED, 0.4, [sym("unsupported_claim")], T)
    assert good > refusal > bad
    assert 0 <= bad and good <= 1
    # a refusal is worth at most 0.4, and less when the evidence was there
    assert refusal <= 0.4 and verified_confidence(REFUSAL, 0.9, [], T) < refusal
    # uncited but supported claims count half
    half = verified_confidence(_answer(["uncited", "uncited"]), 0.9, [], T)
    assert verified_confidence(UNSUPPORTED, 0.9, [], T) < half < good
    # clarification sits between a refusal and a confirmed answer
    assert refusal < verified_confidence(_answer([], route="clarify"), 0.0, [], T) < good


def test_present_symptoms_subtract_and_absent_ones_do_not():
    base = verified_confidence(SUPPORTED, 0.9, [], T)
    assert verified_confidence(SUPPORTED, 0.9, [sym("noisy_context", 0.49)], T) == base
    assert verified_confidence(SUPPORTED, 0.9, [sym("noisy_context", 0.8)], T) < base
    assert present([sym("a", 0.49), sym("b", 0.5)], T) == [sym("b", 0.5)]
    # the penalty is capped, the score never negative
    many = [sym(f"s{i}", 1.0) for i in range(20)] + [sym("injected_instruction", 1.0)]
    assert verified_confidence(SUPPORTED, 0.9, many, T) == pytest.approx(max(0.0, base - 0.8), abs=1e-3)


def test_injected_instruction_penalises_heavily():
    base = verified_confidence(SUPPORTED, 0.9, [], T)
    ordinary = verified_confidence(SUPPORTED, 0.9, [sym("noisy_context", 1.0)], T)
    still_there = Symptom("injected_instruction", 1.0, "scope", "test", data={"chunks": ["c1"]})
    injected = verified_confidence(SUPPORTED, 0.9, [still_there], T)
    assert base - injected >= 0.5
    assert base - injected >= 3 * (base - ordinary)
    # a steered answer is worth no more than an honest refusal
    assert injected <= verified_confidence(REFUSAL, 0.1, [], T) + 1e-9
    # one the scope layer already cut out of the context weighs like any other symptom
    cut_out = Symptom("injected_instruction", 1.0, "scope", "test", data={"chunks": [], "removed": ["c1"]})
    assert verified_confidence(SUPPORTED, 0.9, [cut_out], T) == ordinary


def test_judge_better_rejects_a_worse_candidate():
    ok, why = judge_better(0.5, [], 0.6, [], T, MARGIN)
    assert not ok and "not better" in why
    ok, _ = judge_better(0.61, [], 0.6, [], T, MARGIN)  # within the margin
    assert not ok


def test_judge_better_rejects_a_new_faithfulness_symptom_even_when_higher():
    for name in ("unsupported_claim", "contradicted_claim", "off_topic", "injected_instruction"):
        ok, why = judge_better(0.95, [sym(name)], 0.3, [], T, MARGIN)
        assert not ok and name in why
    # the same symptom already present before is not new
    ok, _ = judge_better(0.95, [sym("unsupported_claim")], 0.3, [sym("unsupported_claim", 0.7)], T, MARGIN)
    assert ok
    # a symptom below the threshold is not present, so not new
    assert judge_better(0.95, [sym("unsupported_claim", 0.3)], 0.3, [], T, MARGIN)[0]


def test_judge_better_accepts_a_clearly_better_one():
    ok, why = judge_better(0.9, [], 0.4, [sym("noisy_context")], T, MARGIN)
    assert ok and "0.40" in why and "0.90" in why
    # a new context symptom is priced into the score, not a veto
    assert judge_better(0.9, [sym("noisy_context")], 0.4, [], T, MARGIN)[0]


# ------------------------------------------------------------------------------------------ the doctor
BAD_DRAFT = "The risk-free rate was fixed at 99 percent by the moon council in 1850 [1]."


class Worsen:
    name = "worsen_for_test"

    def propose(self, exam, symptom):
        return [Change(self.name, "generate", "answer replaced by an unsupported sentence",
                       lambda s: replace(s, draft=BAD_DRAFT), uses_model=False)]


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("verify"), BOND_DOCS)
    yield kb
    kb.close()


def test_doctor_rejects_a_treatment_that_makes_the_answer_worse(kb, monkeypatch):
    q = "What is the risk-free rate?"
    pipe = Pipeline(kb)
    plain = Doctor(pipe).ask(q)
    target = next(s["name"] for s in plain.symptoms)  # a symptom this question shows (noisy context)
    # a private copy of the registry, so the test treatment is gone afterwards
    monkeypatch.setattr(TREATMENTS, "_factories", dict(TREATMENTS._factories))
    TREATMENTS.register(Worsen.name, Worsen)
    monkeypatch.setitem(router.ROUTES, target, (Worsen.name,))
    for other in {s["name"] for s in plain.symptoms} - {target}:
        monkeypatch.setitem(router.ROUTES, other, ())

    result = Doctor(pipe).ask(q)
    assert [r["treatment"] for r in result.repairs] == [Worsen.name]
    r = result.repairs[0]
    assert r["accepted"] is False and r["round"] == 1 and r["symptom"] == target
    assert r["after"]["answer"].startswith("The risk-free rate was fixed at 99 percent")
    assert "unsupported_claim" in r["after"]["symptoms"]
    assert "new symptom" in r["reason"] and "unsupported_claim" in r["reason"], r["reason"]
    assert result.answer.text == result.initial.text
    assert "99 percent" not in result.answer.text
    assert result.answer.citations == result.initial.citations
    assert result.summary["answer_trace_id"] == result.trace.id
    saved = load_trace(kb.db, result.trace.id)
    assert saved.repairs[0]["accepted"] is False and saved.repairs[0]["treatment"] == Worsen.name


def test_registry_and_routes_restored():
    assert Worsen.name not in TREATMENTS.names()
    assert all(Worsen.name not in names for names in router.ROUTES.values())


def test_judge_better_never_accepts_a_vaguer_answer():
    old = Answer("《唐人街探案3》于2021年2月12日上映[3]。", "answer", "factual", False, (), (
        Claim("《唐人街探案3》于2021年2月12日上映", (3,), "supported", 0.9, "c3", "v"),), 0.8, "llm", ())
    new = Answer("《唐人街探案3》的上映时间是2021年[2]。", "answer", "factual", False, (), (
        Claim("《唐人街探案3》的上映时间是2021年", (2,), "supported", 0.9, "c2", "v"),), 0.9, "llm", ())
    ok, why = judge_better(0.95, [], 0.5, [], T, MARGIN, old, new)
    assert not ok and "12" in why and "drops" in why
    ok, _ = judge_better(0.95, [], 0.5, [], T, MARGIN, new, old)  # adding the day is fine
    assert ok


def test_dropping_a_number_does_not_block_removing_an_injection_or_a_refusal():
    old = Answer("The policy rate is 42 percent [2].", "answer", "factual", False, (), (
        Claim("The policy rate is 42 percent", (2,), "supported", 0.9, "c2", "v"),), 0.8, "llm", ())
    quarantined = Answer("The policy rate is set by the board [1].", "answer", "factual", False, (), (
        Claim("The policy rate is set by the board", (1,), "supported", 0.9, "c1", "v"),), 0.8, "llm", ())
    refusal = Answer("I can't answer this from the documents.", "refuse", "factual", True, (), (), 0.4, "template", ())
    ok, _ = judge_better(0.9, [], 0.2, [sym("injected_instruction")], T, MARGIN, old, quarantined)
    assert ok
    ok, _ = judge_better(0.9, [], 0.2, [], T, MARGIN, old, refusal)
    assert ok
    ok, why = judge_better(0.9, [], 0.2, [], T, MARGIN, old, quarantined)
    assert not ok and "42" in why


def _passage(n, chunk_id, support):
    from ragclinic.types import Chunk, DocInfo, Hit, Passage

    chunk = Chunk(chunk_id, "d" + chunk_id, f"{chunk_id} alpha beta {n * 7}", 0, 4, (), None, "zh", 1, n)
    return Passage(n, Hit(chunk, 1.0, (), n), DocInfo("d" + chunk_id, "p", "t"), support=support)


def test_filtering_away_one_side_of_conflicting_evidence_is_no_repair():
    from ragclinic.doctor.verify import dropped_evidence

    right, planted = _passage(1, "c1", 0.8), _passage(2, "c2", 0.9)
    old = replace(SUPPORTED, text="广东宏远 [1]", claims=(Claim("广东宏远 [1]", (1,), "supported", 0.9, "c1"),))
    new = replace(SUPPORTED, text="北京宏远 [2]", claims=(Claim("北京宏远 [2]", (2,), "supported", 0.9, "c2"),))
    dropped = dropped_evidence(old, (right, planted), new, (planted,), sufficient=0.5)
    assert dropped == [1]
    ok, why = judge_better(0.95, [], 0.6, [sym("noisy_context")], T, MARGIN, old, new, dropped)
    assert not ok and "[1]" in why and "conflicting" in why
    # a dropped passage the verifier found insufficient (noise: the wrong year) may go; so may an unchanged answer
    assert dropped_evidence(old, (replace(right, support=0.2), planted), new, (planted,), sufficient=0.5) == []
    assert dropped_evidence(old, (right, planted), replace(new, text="广东宏远 [2]"), (planted,), 0.5) == []
    assert dropped_evidence(old, (right, planted), REFUSAL, (planted,), 0.5) == []
    # word overlap is no verifier's judgement; a kept near-duplicate, or the same claim reworded, is no loss
    assert dropped_evidence(old, (replace(right, support_by="lexical"), planted), new, (planted,), 0.5) == []
    def text(p, t, chunk_id=None):
        return replace(p, hit=replace(p.hit, chunk=replace(p.chunk, text=t, id=chunk_id or p.chunk.id)))

    right_says = text(right, "c1 alpha beta 广东宏远")
    twin = text(planted, "c1 alpha beta 广东宏远", "c3")
    assert dropped_evidence(old, (right_says, twin), new, (twin,), 0.5) == []
    # a near-duplicate that changes the answer (RGB's counterfactual passages) is no twin
    planted_twin = text(planted, "c1 alpha beta gamma delta epsilon zeta eta 北京宏远", "c3")  # Jaccard 0.82
    right_says = text(right, "c1 alpha beta gamma delta epsilon zeta eta 广东宏远")
    assert dropped_evidence(old, (right_says, planted_twin), new, (planted_twin,), 0.5) == [1]
    # the question's own terms are no part of the answer (RGB: "CBA2019-2020赛季的总冠军是广东宏远" vs 北京宏远)
    q = "CBA2019-2020赛季总冠军"
    said = replace(old, text="CBA2019-2020赛季的总冠军是广东宏远[1]",
                   claims=(Claim("CBA2019-2020赛季的总冠军是广东宏远[1]", (1,), "supported", 0.9, "c1"),))
    other = replace(new, text="CBA2019-2020赛季总冠军是北京宏远[2]")
    assert dropped_evidence(said, (right, planted), other, (planted,), 0.5, q) == [1]
    reworded = replace(new, text="广东宏远 夺冠 [2]")
    assert dropped_evidence(old, (right, planted), reworded, (planted,), 0.5) == []
