"""The debugger's graph probe (issue 20 §5): entity missing, relation missing, community summary missing the point;
absent in a knowledge base without a graph."""

from __future__ import annotations

from ragclinic.debugger.base import Expectation
from ragclinic.debugger.debugger import Debugger

from graph.helpers import graph_clinic


def _diagnose(c, question: str, expected: str):
    return Debugger(c.pipeline).diagnose(Expectation(((expected,),)), question=question)


def test_no_graph_no_graph_layer(tmp_path):
    with graph_clinic(tmp_path, mode="") as c:
        d = _diagnose(c, "How often does Fjordline Steel ship plates?", "every month")
        assert "graph" not in d.layers


def test_an_answer_the_extractor_made_no_entity_of_is_entity_missing(tmp_path):
    with graph_clinic(tmp_path) as c:
        d = _diagnose(c, "How often does Fjordline Steel ship plates to the Gdynia Plant?", "every month")
        g = d.layers["graph"]
        assert g.status == "fault" and g.evidence["summary"].startswith("entity missing")
        assert g.evidence["chunks"] and "--graph model" in g.suggestion
        assert d.to_json()["layers"]["graph"]["status"] == "fault"


def test_entities_the_graph_never_relates_are_relation_missing(tmp_path):
    with graph_clinic(tmp_path) as c:
        d = _diagnose(c, "Which Fjordline Steel contact reviews the valves?", "Erik Dahl")
        g = d.layers["graph"]
        assert g.status == "fault" and g.evidence["summary"].startswith("relation missing")
        assert g.evidence["answer_entity"] == "erik dahl" and "fjordline steel" in g.evidence["question_entities"]


def test_a_global_answer_without_the_point_blames_the_community_step(tmp_path):
    with graph_clinic(tmp_path, graph_communities_k=1, need_routing=False) as c:  # the map step alone
        d = _diagnose(c, "What are the main risks discussed across these reports?", "Erik Dahl")
        g = d.layers["graph"]
        assert g.evidence["path"] == "communities" and d.answer_right is False
        assert g.status == "fault" and g.evidence["summary"].startswith("community summary missing the point")
        assert d.verdict == "graph" and "graph_communities_k" in d.suggestion


def test_a_graph_that_holds_the_answer_is_ok(tmp_path):
    with graph_clinic(tmp_path) as c:
        d = _diagnose(c, "Who manages the Gdynia Plant?", "Piotr Nowak")
        assert d.layers["graph"].status == "ok"


def test_a_documents_path_answer_whose_passages_hold_the_point_does_not_blame_the_graph(tmp_path):
    with graph_clinic(tmp_path, graph_communities_k=1) as c:
        d = _diagnose(c, "What are the main risks discussed across these reports?", "Erik Dahl")
        g = d.layers["graph"]
        assert g.evidence["path"].startswith("documents") and g.status == "ok"
