"""Scope policies: newest version (a pre-filter), authority preference, conflict marking."""

from __future__ import annotations

from helpers import build_kb
from ragclinic.pipeline.runner import Pipeline
from ragclinic.pipeline.scope.conflicts import find_conflicts
from ragclinic.pipeline.scope.policies import apply_authority, superseded, version_key
from ragclinic.types import Chunk, DocInfo, Hit, Passage


def test_versions_compare_numerically():
    assert version_key("1.10") > version_key("1.9") > version_key("1") and version_key("v2") > version_key("1.9")


def test_superseded_by_family_or_title():
    rows = [("a", "Handbook", {"version": "1"}), ("b", "Handbook", {"version": "2"}),
            ("c", "Other", {"family": "hb", "version": "3"}), ("d", "Renamed", {"family": "hb", "version": "10"}),
            ("e", "Handbook", {})]  # no version tag: never excluded
    assert set(superseded(rows)) == {"a", "c"}
    assert "superseded by version 2" in superseded(rows)["a"]


def test_versions_are_versions_of_one_another_only_within_one_tenant():
    """Issue 32: one tenant's higher version must not hide another tenant's document of the same title (or family)."""
    rows = [("a", "Handbook", {"version": "1", "tenant": "acme"}), ("b", "Handbook", {"version": "5", "tenant": "globex"}),
            ("c", "Handbook", {"version": "2", "tenant": "acme"}), ("d", "Other", {"family": "hb", "version": "1"}),
            ("e", "Other", {"family": "hb", "version": "9", "tenant": "globex"})]
    assert superseded(rows) == {"a": "version 1 is superseded by version 2 (handbook)"}


def test_a_tenants_newer_version_does_not_hide_another_tenants_document(tmp_path):
    docs = {"acme.md": "# Leave policy\n\nAcme employees get 20 days of annual leave.\n",
            "globex.md": "# Leave policy\n\nGlobex employees get 30 days of annual leave.\n"}
    meta = {"acme.md": {"version": "1", "tenant": "acme"}, "globex.md": {"version": "9", "tenant": "globex"}}
    kb = build_kb(tmp_path, docs, meta)
    state, trace = Pipeline(kb).ask("How many days of annual leave do employees get?")  # the admin, unscoped
    texts = " ".join(p.chunk.text for p in state.passages)
    assert "20 days" in texts and "30 days" in texts and not trace.span("scope").outputs["excluded"]
    kb.close()


DOCS = {"policy-v1.md": "# Leave policy\n\nEmployees get 20 days of annual leave.\n",
        "policy-v2.md": "# Leave policy\n\nEmployees get 25 days of annual leave.\n",
        "memo.md": "# Memo\n\nThe canteen opens at noon and annual leave requests go to HR.\n"}
META = {"policy-v1.md": {"version": "1"}, "policy-v2.md": {"version": "2"}}


def test_newest_version_only_unless_a_version_is_asked_for(tmp_path):
    kb = build_kb(tmp_path, DOCS, META)
    pipe = Pipeline(kb)
    state, trace = pipe.ask("How many days of annual leave do employees get?")
    texts = [p.chunk.text for p in state.passages]
    assert any("25 days" in t for t in texts) and not any("20 days" in t for t in texts)
    excluded = trace.span("scope").outputs["excluded"]
    assert len(excluded) == 1 and excluded[0]["rule"] == "version=latest"
    old, _ = pipe.ask("How many days of annual leave do employees get?", {"version": "1"})
    assert any("20 days" in p.chunk.text for p in old.passages)
    kb.close()


def _hit(doc: str, score: float, text: str = "x") -> Hit:
    return Hit(Chunk(f"c-{doc}", doc, text, 0, len(text), (), None, "en", 5, 0), score, (), hash(doc) % 1000)


def test_authority_wins_near_ties_but_not_relevance():
    docs = {"wiki": DocInfo("wiki", "/w", "w", {"authority": "draft"}),
            "std": DocInfo("std", "/s", "s", {"authority": "official"})}
    levels = {"official": 3.0, "draft": 0.0}
    near, moved = apply_authority([_hit("wiki", 1.00), _hit("std", 0.95)], docs, "authority", levels, 0.1)
    assert [h.chunk.doc_id for h in near] == ["std", "wiki"] and moved == 2
    far, moved = apply_authority([_hit("wiki", 1.0), _hit("std", 0.5)], docs, "authority", levels, 0.1)
    assert [h.chunk.doc_id for h in far] == ["wiki", "std"] and moved == 0



def test_authority_compares_documents_of_one_tenant_only():
    """A tenant's own authority tag (issue 32) must not lift its documents over another tenant's in the admin's
    unscoped question: the places each tenant's hits hold stay theirs; within a tenant the boost works as before."""
    levels = {"official": 3.0, "draft": 0.0}
    docs = {"b-doc": DocInfo("b-doc", "/b", "b", {"tenant": "globex"}),
            "a-top": DocInfo("a-top", "/a", "a", {"tenant": "acme", "authority": "official"}),
            "a-low": DocInfo("a-low", "/l", "l", {"tenant": "acme", "authority": "draft"}),
            "a-near": DocInfo("a-near", "/n", "n", {"tenant": "acme"})}
    hits, moved = apply_authority([_hit("b-doc", 1.0), _hit("a-top", 0.95)], docs, "authority", levels, 0.1)
    assert [h.chunk.doc_id for h in hits] == ["b-doc", "a-top"] and moved == 0
    hits, moved = apply_authority([_hit("a-low", 1.0), _hit("b-doc", 0.99), _hit("a-top", 0.95)], docs,
                                  "authority", levels, 0.1)
    assert [h.chunk.doc_id for h in hits] == ["a-top", "b-doc", "a-low"] and moved == 2
    untagged = {k: DocInfo(d.doc_id, d.path, d.title, {t: v for t, v in d.tags.items() if t != "tenant"})
                for k, d in docs.items()}  # one owner: the boost as before
    hits, _ = apply_authority([_hit("b-doc", 1.0), _hit("a-top", 0.95)], untagged, "authority", levels, 0.1)
    assert [h.chunk.doc_id for h in hits] == ["a-top", "b-doc"]

def _passage(n: int, doc: str, text: str) -> Passage:
    return Passage(n, _hit(doc, 1.0, text), DocInfo(doc, f"/{doc}", doc))


def test_conflicts_are_marked_between_documents():
    q = "How many days of annual leave do employees get?"
    ps = [_passage(1, "a", "Employees get 20 days of annual leave."),
          _passage(2, "b", "Employees get 25 days of annual leave per year."),
          _passage(3, "c", "Employees get 20 days of annual leave.")]
    [c1, c2] = find_conflicts(q, ps)
    assert (c1.kind, c1.values_a, c1.values_b) == ("number", ("20 days",), ("25 days",))
    assert {c1.chunk_a, c1.chunk_b} == {"c-a", "c-b"} and {c2.chunk_a, c2.chunk_b} == {"c-b", "c-c"}
    same_doc = [_passage(1, "a", "Employees get 20 days of annual leave."),
                _passage(2, "a", "Employees get 25 days of annual leave.")]
    assert find_conflicts(q, same_doc) == []
    dates = [_passage(1, "a", "The bridge opened to traffic in 1932."),
             _passage(2, "b", "The bridge opened to traffic in 1937.")]
    assert find_conflicts("When did the bridge open to traffic?", dates)[0].kind == "date"
    names = [_passage(1, "a", "The 2019 report was written by Alice Martin for the board."),
             _passage(2, "b", "The 2019 report was written by Bob Chen for the board.")]
    assert find_conflicts("Who wrote the 2019 report for the board?", names)[0].kind == "entity"


def test_conflicting_passages_stay_in_the_context_marked(tmp_path):
    docs = {"hr.md": "# HR guide\n\nEmployees get 20 days of annual leave.\n",
            "wiki.md": "# Wiki page\n\nEmployees get 25 days of annual leave.\n"}
    kb = build_kb(tmp_path, docs)
    state, _ = Pipeline(kb).ask("How many days of annual leave do employees get?")
    assert len(state.conflicts) == 1
    assert sorted(p.marks for p in state.passages if "conflict" in p.marks) == [("conflict",), ("conflict",)]
    assert "disagree" in state.answer.text
    kb.close()
