"""The doctor on global questions (issue 20 §5): answered from chunks alone is ``global_no_community``; with a
graph the ``use_communities`` treatment re-runs from the gate over the communities; without one the answer says
so and names the fix."""

from __future__ import annotations

from ragclinic.doctor.detectors.graph import GlobalNoCommunity
from ragclinic.doctor.symptoms import Exam

from graph.helpers import graph_clinic

Q = "What are the main risks discussed across these reports?"


def test_without_a_graph_a_global_question_takes_the_documents_path_and_is_healthy(tmp_path):
    with graph_clinic(tmp_path, mode="") as c:  # issue 55: routing by need (reason/need.py)
        state, trace = c.pipeline.ask(Q)
        assert trace.span("gate").outputs["graph"]["path"] == "documents"
        sym = GlobalNoCommunity().detect(Exam(state, trace, c.kb, c.settings))
        assert sym.score == 0.0 and "documents" in sym.evidence


def test_without_a_graph_the_answer_names_the_fix(tmp_path):
    with graph_clinic(tmp_path, mode="", need_routing=False) as c:  # the cue rules alone: top-k chunks
        res = c.consult(Q, cache=False)
        names = {s["name"] for s in res.payload["symptoms"]} if "symptoms" in res.payload else set()
        flags = res.answer.flags
        assert any(f.startswith("global_no_community") for f in flags), flags
        note = " ".join(res.answer.notes)  # beside the answer, never in its text
        assert "ingest" in note and "--graph" in note and "ingest" not in res.answer.text
        assert res.payload["notes"] == list(res.answer.notes)
        assert not names or "global_no_community" in names


def test_with_a_graph_a_global_answer_over_communities_is_healthy(tmp_path):
    with graph_clinic(tmp_path) as c:
        state, trace = c.pipeline.ask(Q)
        sym = GlobalNoCommunity().detect(Exam(state, trace, c.kb, c.settings))
        assert sym.score == 0.0 and "communities" in sym.evidence


def test_use_communities_reruns_a_chunk_answered_global_question_from_the_gate(tmp_path):
    from ragclinic.doctor.treatments.graph import UseCommunities
    from dataclasses import replace

    # the rules never call a question global; the map step alone (need routing takes the documents path)
    with graph_clinic(tmp_path, graph_global_threshold=1.01, need_routing=False) as c:
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


def _finish(tmp_path, q: str, fix: str):
    import re

    from ragclinic.doctor.doctor import Doctor, Visit
    from ragclinic.types import Symptom

    from .factories import make_answer, make_claim, make_passage, make_state, settings

    p = make_passage(1, "安全问题包括电池起火。" if re.search(r"[\u4e00-\u9fff]", q) else "Battery fires were a risk.")
    answer = make_answer("电池起火[1]。", [make_claim("电池起火")], [p])
    doctor = Doctor.__new__(Doctor)
    doctor.settings, doctor.pipe = settings(tmp_path), None
    sym = Symptom("global_no_community", 0.7, "gate", "global question answered from chunks alone",
                  data={"graph": fix == "fix_no_match", "fix": fix})
    return doctor._finish(Visit(make_state(q, [p], answer), None, [sym], 0.5))


def test_the_global_note_is_beside_the_answer_in_the_questions_language(tmp_path):
    import re

    a = _finish(tmp_path, "总结这些文件中提到的主要安全问题", "fix_no_graph")
    assert a.text == "电池起火[1]。" and len(a.notes) == 1  # the text holds only the answer
    note = a.notes[0]
    assert "整个文档集" in note and "ragclinic ingest DOCS --kb DIR --graph" in note
    assert not re.search(r"[A-Za-z]", note.replace("ragclinic ingest DOCS --kb DIR --graph", ""))  # no English
    assert any(f.startswith("global_no_community") for f in a.flags)
    other = _finish(tmp_path, "总结这些文件中提到的主要安全问题", "fix_no_match").notes[0]
    assert "知识图谱" in other and not re.search(r"[A-Za-z]", other.replace("graph_communities_k", ""))
    en = _finish(tmp_path, "What are the main risks discussed across these reports?", "fix_no_graph").notes[0]
    assert en.startswith("This question is about the whole collection") and "--graph" in en
