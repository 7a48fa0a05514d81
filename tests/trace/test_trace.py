"""Traces: persisted per ask, loadable by prefix, replayable with frozen model outputs, re-runnable from
any layer with a changed state."""

from __future__ import annotations

import dataclasses
import json

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.errors import ModelError, RagclinicError, StoreError
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.model import QUERY_LAYERS, Trace
from ragclinic.trace.store import list_traces, load_trace


@pytest.fixture
def kb(tmp_path):
    base = build_kb(tmp_path, BOND_DOCS, openai_api_key="sk-secret")
    yield base
    base.close()


def _lm():
    return ScriptedLanguageModel(["The risk-free rate is the return on an investment with no default risk [1]."],
                                 yes_prob=0.9)


def test_every_ask_is_persisted_with_one_span_per_layer(kb):
    state, trace = Pipeline(kb, lm=_lm()).ask("What is the risk-free rate?", {"path": "*.md"})
    loaded = load_trace(kb.db, trace.id)
    assert loaded == Trace.from_dict(json.loads(json.dumps(trace.to_dict())))
    assert [s.layer for s in loaded.spans] == list(QUERY_LAYERS) and all(s.status == "ok" for s in loaded.spans)
    assert loaded.final["answer"] == state.answer.text and loaded.final["trace_id"] == trace.id
    assert loaded.scope == {"path": "*.md"} and loaded.kb_version == kb.db.version
    assert "sk-secret" not in json.dumps(loaded.to_dict())  # secrets never reach the trace
    [call] = [c for c in loaded.model_calls if c.kind == "chat"]
    assert call.layer == "generate" and call.prompt_tokens > 0 and call.completion_tokens > 0
    assert load_trace(kb.db, trace.id[:-3]).id == trace.id  # a unique prefix is enough
    assert list_traces(kb.db, 5)[0]["id"] == trace.id


def test_unknown_and_ambiguous_trace_ids_are_explained(kb):
    pipe = Pipeline(kb)
    a = pipe.ask("What is duration?")[1]
    pipe.ask("What is the risk-free rate?")
    with pytest.raises(StoreError, match="no trace 'nope'.*trace list"):
        load_trace(kb.db, "nope")
    with pytest.raises(StoreError, match="ambiguous"):
        load_trace(kb.db, a.id[:9])


def test_frozen_replay_needs_no_model_and_reproduces_the_answer(kb):
    _, original = Pipeline(kb, lm=_lm()).ask("What is the risk-free rate?")
    state, replay = Pipeline(kb, lm=None).rerun(original, "retrieve", frozen=True)
    assert state.answer.text == original.final["answer"]
    assert [c.key for c in replay.model_calls] == [c.key for c in original.model_calls]
    assert replay.parent_id == original.id and replay.debug_round_id == original.debug_round_id


def test_replay_without_a_recorded_call_says_so(kb):
    _, original = Pipeline(kb, lm=_lm()).ask("What is the risk-free rate?")
    stripped = dataclasses.replace(original, model_calls=tuple(c for c in original.model_calls if c.kind != "chat"))
    with pytest.raises(ModelError, match="did not record"):
        Pipeline(kb, lm=None).rerun(stripped, "generate", frozen=True)


def test_rerun_from_a_layer_keeps_earlier_layers_and_applies_the_change(kb):
    pipe = Pipeline(kb, lm=_lm())
    first, original = pipe.ask("What is the risk-free rate?")
    assert first.answer.route == "answer"
    # a counterfactual: the gate sees no passages
    state, rerun = pipe.rerun(original, "gate", change=lambda s: dataclasses.replace(s, passages=()))
    assert state.answer.route == "refuse"
    assert [(s.layer, s.status) for s in rerun.spans] == [("retrieve", "replayed"), ("scope", "replayed"),
                                                          ("change", "applied"), ("gate", "ok"), ("generate", "ok")]
    assert rerun.rerun_from == "gate" and load_trace(kb.db, rerun.id).parent_id == original.id
    assert rerun.span("change").input.changed == ("passages",)
    # the child trace holds the state its change made: replayed on its own, it gives its own answer (a refusal),
    # not its parent's
    again, _ = Pipeline(kb, lm=None).rerun(load_trace(kb.db, rerun.id), "gate", frozen=True)
    assert again.answer.route == "refuse" and again.answer.text == rerun.final["answer"]
    # a change that changes nothing writes no change span
    _, same = pipe.rerun(original, "gate", change=lambda s: s)
    assert [s.layer for s in same.spans] == ["retrieve", "scope", "gate", "generate"]


def test_restart_needs_a_query_layer(kb):
    _, t = Pipeline(kb).ask("What is duration?")
    with pytest.raises(RagclinicError, match="query layers: retrieve, scope, gate, generate"):
        Pipeline(kb).rerun(t, "parse")


def test_schema_2_knowledge_base_gains_the_trace_table(tmp_path):
    from ragclinic.store.db import Database

    db = Database(tmp_path / "kb.sqlite")
    db.set_meta("schema_version", "2")
    db.conn.execute("DROP TABLE traces")
    db.close()
    db = Database(tmp_path / "kb.sqlite")
    assert db.meta("schema_version") == "4" and list_traces(db) == []
    db.close()


def test_a_rating_and_the_doctors_record_never_erase_each_other(kb):
    """The doctor in the background saves the trace it loaded before a user rated the answer (and a rating may
    land while the doctor saves): both survive."""
    from ragclinic.trace.store import add_feedback, save_trace

    _, trace = Pipeline(kb).ask("What is the risk-free rate?")
    loaded = load_trace(kb.db, trace.id)  # the doctor's copy, loaded before the rating
    assert add_feedback(kb.db, trace.id, {"rating": -1, "note": "too short"}) == 1
    save_trace(kb.db, dataclasses.replace(loaded, doctor={"outcome": "healthy"}))
    again = load_trace(kb.db, trace.id)
    assert again.doctor == {"outcome": "healthy"} and [f["rating"] for f in again.feedback] == [-1]
    assert add_feedback(kb.db, trace.id, {"rating": 1, "note": ""}) == 2
    final = load_trace(kb.db, trace.id)
    assert final.doctor == {"outcome": "healthy"} and [f["rating"] for f in final.feedback] == [-1, 1]
