"""The doctor on global questions (issue 20 §5): answered from chunks alone is ``global_no_community``; with a
graph the ``use_communities`` treatment re-runs from the gate over the communities; without one the answer says
so and names the fix."""

from __future__ import annotations

from ragclinic.doctor.detectors.graph import GlobalNoCommunity
from ragclinic.doctor.symptoms import Exam

from graph.helpers import graph_clinic

Q = "What are the main risks discussed across these reports?"


def test_without_a_graph_the_answer_names_the_fix(tmp_path):
    with graph_clinic(tmp_path, mode="") as c:
        res = c.consult(Q, cache=False)
        names = {s["name"] for s in res.payload["symptoms"]} if "symptoms" in res.payload else set()
        flags = res.answer.flags
        assert any(f.startswith("global_no_community") for f in flags), flags
        assert "ingest" in res.answer.text and "--graph" in res.answer.text
        assert not names or "global_no_community" in names


def test_with_a_graph_a_global_answer_over_communities_is_healthy(tmp_path):
    with graph_clinic(tmp_path) as c:
        state, trace = c.pipeline.ask(Q)
        sym = GlobalNoCommunity().detect(Exam(state, trace, c.kb, c.settings))
        assert sym.score == 0.0 and "communities" in sym.evidence


def test_use_communities_reruns_a_chunk_answered_global_question_from_the_gate(tmp_path):
    from ragclinic.doctor.treatments.graph import UseCommunities
    from dataclasses import replace

    with graph_clinic(tmp_path, graph_global_threshold=1.01) as c:  # the rules never call a question global
        q = "Which risks does Nordtek Components bring to the Bergen Yard?"
        state, trace = c.pipeline.ask(q)
        assert trace.span("gate").outputs["graph"]["kind"] == "specific"
        sym = replace(GlobalNoCommunity().detect(Exam(state, trace, c.kb, c.settings)), data={"graph": True})
        (change,) = UseCommunities().propose(Exam(state, trace, c.kb, c.settings), sym)
        assert change.layer == "gate"
        new, child = c.pipeline.rerun(trace, "gate", change=change.apply, save=False)
        g = child.span("gate").outputs["graph"]
        assert g["kind"] == "global" and g["path"] == "communities"
        assert new.decision.path == "global" and new.answer.citations
