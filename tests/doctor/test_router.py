"""The router: ROUTES/ORDER tables and plan() (upstream first, tried treatments skipped, clarify only when
interactive)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragclinic.doctor import detectors  # noqa: F401  (registers the detectors)
from ragclinic.doctor import router
from ragclinic.doctor.router import ORDER, ROUTES, plan
from ragclinic.doctor.symptoms import DETECTORS
from ragclinic.types import Symptom
from ragclinic.doctor.treatments import TREATMENTS

from .factories import make_answer, make_claim, make_exam, make_passage, make_state, settings


@pytest.fixture
def cfg(tmp_path):
    return settings(tmp_path)


def test_routes_cover_every_detector_and_name_registered_treatments():
    detectors_ = set(DETECTORS.names())
    treatments = set(TREATMENTS.names())
    # every detector has a route, every route belongs to a detector
    assert set(ROUTES) == detectors_
    for symptom, names in ROUTES.items():
        assert names, symptom
        assert set(names) <= treatments, (symptom, set(names) - treatments)
        assert len(set(names)) == len(names)
    # every built-in treatment is reachable from some symptom
    assert treatments <= {t for names in ROUTES.values() for t in names}


def test_order_is_complete_and_safety_first():
    assert ORDER[0] == "injected_instruction"
    assert len(set(ORDER)) == len(ORDER)
    assert set(ORDER) == set(ROUTES)
    # query before retrieval before context before generation
    rank = {n: i for i, n in enumerate(ORDER)}
    assert rank["compound"] < rank["low_relevance"] < rank["noisy_context"] < rank["unsupported_claim"]
    assert max(rank[n] for n in ("ambiguous", "compound", "term_mismatch")) < min(
        rank[n] for n in ("unsupported_claim", "contradicted_claim", "citation_error", "off_topic"))


Q = "What is duration and what is the risk-free rate?"
RFR = "The risk-free rate is the return on an investment with no default risk."


def _exam(cfg, *, interactive=False):
    ps = [make_passage(1, RFR), make_passage(2, "The cat sat on the warm kitchen floor all afternoon."),
          make_passage(3, "Retrieval augmented generation grounds answers in retrieved passages.")]
    ans = make_answer("The risk-free rate is the return on an investment with no default risk [1]. "
                      "The risk-free rate is 12 percent [1].",
                      [make_claim("The risk-free rate is the return on an investment with no default risk.", (1,),
                                  "supported", 1.0),
                       make_claim("The risk-free rate is 12 percent.", (1,), "unsupported", 0.3)], ps)
    return make_exam(make_state(Q, ps, ans), cfg, interactive=interactive)


def _symptoms(exam):
    inj = Symptom("injected_instruction", 1.0, "scope", "x", data={"chunks": [exam.passages[1].chunk.id]})
    comp = Symptom("compound", 0.8, "retrieve", "x", data={"parts": ["What is duration?", "What is the risk-free rate?"]})
    noisy = Symptom("noisy_context", 0.9, "scope", "x", data={"keep": [1], "noise": [2, 3]})
    unsup = Symptom("unsupported_claim", 0.95, "generate", "x", data={"claims": ["The risk-free rate is 12 percent."]})
    return inj, comp, noisy, unsup


def test_plan_orders_upstream_symptoms_first(cfg):
    exam = _exam(cfg)
    inj, comp, noisy, unsup = _symptoms(exam)
    steps = plan([unsup, noisy, comp, inj], exam, set())
    names = [c.treatment for _, c in steps]
    assert names[:4] == ["quarantine", "decompose", "filter_context", "refine"]
    assert [s.name for s, _ in steps[:4]] == ["injected_instruction", "compound", "noisy_context", "unsupported_claim"]
    layers = {c.treatment: c.layer for _, c in steps}
    assert layers["quarantine"] == "scope" and layers["decompose"] == "retrieve" and layers["refine"] == "generate"
    # the change does what it says on a state
    st = steps[0][1].apply(exam.state)
    assert st.request.quarantine == (exam.passages[1].chunk.id,)
    st = steps[1][1].apply(exam.state)
    assert st.request.sub_questions == ("What is duration?", "What is the risk-free rate?")


def test_plan_skips_tried_treatments(cfg):
    exam = _exam(cfg)
    inj, comp, noisy, unsup = _symptoms(exam)
    steps = plan([unsup, noisy, comp, inj], exam, {"quarantine", "decompose"})
    names = [c.treatment for _, c in steps]
    assert "quarantine" not in names and "decompose" not in names
    assert names[0] == "filter_context"
    assert plan([inj, comp], exam, {"quarantine", "decompose"}) == []


def test_plan_proposes_a_shared_treatment_once(cfg):
    exam = _exam(cfg)
    unsup = _symptoms(exam)[3]
    cite = Symptom("citation_error", 0.7, "generate", "x")
    contra = Symptom("contradicted_claim", 0.9, "generate", "x", data={"claims": ["The risk-free rate is 12 percent."]})
    steps = plan([cite, unsup, contra], exam, set())
    assert [c.treatment for _, c in steps].count("refine") == 1
    assert steps[0][0].name == "contradicted_claim"  # the most upstream of the three claims refine


def test_plan_ties_go_to_the_stronger_symptom(cfg, monkeypatch):
    exam = _exam(cfg)
    weak = Symptom("noisy_context", 0.55, "scope", "weak", data={"keep": [1]})
    strong = Symptom("noisy_context", 0.95, "scope", "strong", data={"keep": [1, 2]})
    steps = plan([weak, strong], exam, set())
    assert len(steps) == 1 and steps[0][0].evidence == "strong"


def test_plan_ignores_unknown_symptoms(cfg):
    assert plan([Symptom("no_such_symptom", 1.0, "generate", "x")], _exam(cfg), set()) == []


def test_plan_clarify_only_when_interactive(cfg):
    amb = Symptom("ambiguous", 0.8, "retrieve", "“it” refers to nothing", data={"kind": "reference", "word": "it"})
    exam = _exam(cfg, interactive=True)
    steps = plan([amb], exam, set())
    assert steps and steps[0][1].treatment == "clarify"
    change = steps[0][1]
    assert change.terminal and not change.uses_model and change.layer == "generate"
    st = change.apply(exam.state)
    assert st.decision.route == "clarify" and "it" in st.decision.clarifying_question
    # not interactive: no clarifying question; a reference has no readings either
    assert plan([amb], _exam(cfg, interactive=False), set()) == []


def test_plan_readings_when_not_interactive(cfg):
    senses = [{"title": "Mercury (planet)", "doc_id": "a", "terms": ["planet"]},
              {"title": "Mercury (element)", "doc_id": "b", "terms": ["metal"]}]
    amb = Symptom("ambiguous", 0.7, "retrieve", "senses", data={"kind": "senses", "senses": senses})
    exam = _exam(cfg, interactive=False)
    steps = plan([amb], exam, set())
    assert [c.treatment for _, c in steps] == ["readings"]
    st = steps[0][1].apply(exam.state)
    assert len(st.request.sub_questions) == 2
    assert all("Mercury" in r for r in st.request.sub_questions)
    interactive = plan([amb], _exam(cfg, interactive=True), set())
    assert [c.treatment for _, c in interactive] == ["clarify", "readings"]
    assert "Mercury (planet)" in interactive[0][1].describe and "Mercury (element)" in interactive[0][1].describe


def test_plan_chinese_clarifying_question(cfg):
    amb = Symptom("ambiguous", 0.8, "retrieve", "x", data={"kind": "reference", "word": "它"})
    exam = _exam(cfg, interactive=True)
    exam.state = replace(exam.state, request=replace(exam.state.request, question="它是什么时候成立的？"))
    steps = plan([amb], exam, set())
    assert steps[0][1].treatment == "clarify" and "它" in steps[0][1].describe and "？" in steps[0][1].describe


def test_plan_uses_the_live_routes_table(cfg, monkeypatch):
    exam = _exam(cfg)
    inj = _symptoms(exam)[0]
    monkeypatch.setitem(router.ROUTES, "injected_instruction", ())
    assert plan([inj], exam, set()) == []
