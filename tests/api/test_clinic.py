"""The public API: ragclinic.Clinic opens a knowledge base, ingests, answers, and explains its answers; its
traces replay to their recorded answers without a model, and re-runs record what they changed."""

from __future__ import annotations

import dataclasses

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from ragclinic.errors import RagclinicError, StoreError
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.types import Answer

RIGHT = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."


def _docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in BOND_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _open(tmp_path, replies=(RIGHT,), **settings):
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp_path / "cache", **settings}
    return Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel(list(replies), yes_prob=0.9), **settings)


def test_open_ingest_ask_and_read_the_trace(tmp_path):
    with _open(tmp_path) as c:
        res = c.ingest([_docs(tmp_path)], tags={"team": "finance"})
        assert (res.added, len(res.failed), res.chunks > 0) == (5, 0, True)
        a = c.ask("What is usually used as a proxy for the risk-free rate?", doctor=False)
        assert isinstance(a, Answer) and not a.refused and a.route == "answer"
        assert "treasury bills" in a.text and a.trace_id and a.model_calls >= 1
        [cite] = a.citations
        assert cite.n == 1 and cite.path.endswith("bonds.md") and "treasury bills" in cite.text and cite.chunk_id
        t = c.trace(a.trace_id)
        assert t.id == a.trace_id and t.parent_id == "" and t.question.startswith("What is usually")
        assert [s.layer for s in t.spans] == ["retrieve", "scope", "gate", "generate"]
        assert all(s.seconds >= 0 for s in t.spans)
        retrieve = t.spans[0]
        assert retrieve.input.top_k == 10 and retrieve.output.hits[0].chunk.doc_id == cite.doc_id
        assert t.spans[-1].output.answer.text == a.text
        assert [p.chunk.id for p in t.state_after("scope").passages][0] == cite.chunk_id
        assert t.state_after("gate").decision.route == "answer"
        assert t.answer.text == a.text


def test_replay_rebuilds_the_answer_without_a_model(tmp_path):
    with _open(tmp_path) as c:
        c.ingest(_docs(tmp_path))
        a = c.ask("What is usually used as a proxy for the risk-free rate?", doctor=False, cache=False)
    # a new clinic without any model: the recorded outputs are enough
    with Clinic.open(tmp_path / "kb", llm="none", embedder="fake", judge="llm", cache_dir=tmp_path / "cache") as c:
        again = c.replay(a.trace_id)
        assert again.model_calls == 0
        assert again.to_json() == c.trace(a.trace_id).final == dataclasses.replace(a, model_calls=0).to_json()


def test_rerun_with_a_change_records_it_and_replays_to_its_own_answer(tmp_path):
    with _open(tmp_path, replies=(RIGHT, RIGHT)) as c:
        c.ingest(_docs(tmp_path))
        a = c.ask("What is usually used as a proxy for the risk-free rate?", doctor=False, cache=False)
        # a counterfactual: the gate sees none of the passages
        b = c.rerun(a.trace_id, "gate", change=lambda st: dataclasses.replace(st, passages=()))
        child = c.trace(b.trace_id)
        assert child.parent_id == a.trace_id and b.refused and not a.refused
        assert child.span("change").input.changed == ("passages",)
        assert c.replay(b.trace_id).to_json() == child.final  # its own answer, not its parent's
        # a request change given as a dict
        d = c.rerun(a.trace_id, "retrieve", change={"top_k": 2})
        assert c.trace(d.trace_id).span("retrieve").input.top_k == 2 == c.trace(d.trace_id).state_after("retrieve").request.top_k
        with pytest.raises(RagclinicError, match="unknown request field.*top_kk"):
            c.rerun(a.trace_id, "retrieve", change={"top_kk": 2})
        with pytest.raises(RagclinicError, match="query layers"):
            c.rerun(a.trace_id, "parse")


def test_the_doctor_answer_carries_its_symptoms_and_repairs(tmp_path):
    with _open(tmp_path, replies=(RIGHT,) * 8) as c:
        c.ingest(_docs(tmp_path))
        a = c.ask("What is usually used as a proxy for the risk-free rate?", cache=False)
        assert isinstance(a.symptoms, tuple) and isinstance(a.repairs, tuple)
        full = c.consult("What is usually used as a proxy for the risk-free rate?", cache=False)
        assert full.result is not None and full.payload["doctor"] == full.result.summary
        assert full.payload["answer"] == full.answer.text and "symptoms" in full.payload


def test_diagnose_names_a_layer_and_a_fix(tmp_path):
    with _open(tmp_path, replies=("The cat sat on the floor [1].",) * 4) as c:
        c.ingest(_docs(tmp_path))
        a = c.ask("What is usually used as a proxy for the risk-free rate?", doctor=False, cache=False)
        d = c.diagnose(trace_id=a.trace_id, expected="treasury bills")
        assert d.verdict == "generate" and d.fix and d.evidence["summary"]
        ok = c.diagnose(question="What does duration measure?", expected="bond price")
        assert ok.verdict in ("none", "generate") and ok.fix


def test_asking_before_ingesting_names_the_fix_and_creates_nothing(tmp_path):
    with Clinic.open(tmp_path / "nokb", llm="none", embedder="fake") as c:
        with pytest.raises(StoreError, match="ingest"):
            c.ask("anything?")
    assert not (tmp_path / "nokb").exists()


def test_an_enforced_tenant_sees_only_its_documents_whatever_scope_is_asked(tmp_path):
    root = tmp_path / "docs"
    for tenant, text in (("acme", "The acme refund window is 45 days."), ("globex", "The globex refund window is 7 days.")):
        (root / tenant).mkdir(parents=True)
        (root / tenant / "refunds.md").write_text(f"# Refunds\n\n{text}\n", encoding="utf-8")
    with _open(tmp_path, replies=("The refund window is 45 days [1].",) * 20, llm="none") as c:
        c.ingest([root / "acme"], tags={"tenant": "acme"})
        c.ingest([root / "globex"], tags={"tenant": "globex"})
        for scope in (None, {"tenant": "globex"}, {"path": "*globex*"}, {"tenant": "acme"}):
            seen = c.consult("What is the refund window?", scope, doctor=False, cache=False,
                             enforced={"tenant": "acme"})
            docs = {p.doc.tags.get("tenant") for p in seen.trace.state_after("scope").passages}
            assert docs <= {"acme"}, (scope, docs)
            assert "globex" not in seen.answer.text and "7 days" not in seen.answer.text
            if scope in ({"tenant": "globex"}, {"path": "*globex*"}):
                assert seen.answer.refused and not docs  # as if globex's documents did not exist
        # the re-runs and replays keep the enforcement (it is part of the recorded request)
        t = c.trace(seen.trace.id)
        assert t.state_after("retrieve").request.enforced == (("tenant", "acme"),)
