"""A recorded trace replays to its recorded answer with no model call after the knowledge base has changed
(issue 32: the server's replay answered 400 "replay needs a model call that the trace did not record" once an
upload had changed the knowledge base). The gate reads the knowledge base too — the graph's communities for
global and mixed questions — so a new document gave the replayed gate another passage, hence another prompt."""

from __future__ import annotations

import re

from ragclinic.models.fake_llm import ScriptedLanguageModel

from graph.helpers import graph_clinic, write_docs

NEW = {"contract-baltica.md": "# Contract: Baltica Rope\n\nHalvorsen Marine buys mooring ropes from Baltica Rope. "
                              "Baltica Rope ships the ropes to the Bergen Yard.\n\n## Risks\n\nFraying of mooring "
                              "ropes at the Bergen Yard was reported by Erik Dahl.\n"}
QUESTIONS = ("What are the main risks discussed across these reports?",
             "Across all documents, what roles has Nordtek Components played?",
             "Who manages the Gdynia Plant?")


def _echo(messages) -> str:
    """Cites every passage it is shown: a prompt with one more passage is another call."""
    ns = re.findall(r"^\[(\d+)\]", messages[-1].content, re.M)
    return " ".join(f"Point {n} [{n}]." for n in ns) or "The documents do not say."


def test_a_trace_replays_without_a_model_after_an_ingest_changed_the_graph(tmp_path):
    model = ScriptedLanguageModel([_echo], yes_prob=0.9)
    with graph_clinic(tmp_path, model=model) as c:
        made = [c.consult(q, doctor=False, cache=False) for q in QUESTIONS]
        assert all(r.trace.model_calls for r in made)  # each answer came from the model
        version = c.kb.db.version
        c.ingest([write_docs(tmp_path / "more", NEW)])
        assert c.kb.db.version != version
        for r in made:
            t = c.trace(r.trace.id)
            again = c.replay(t.id)
            assert again.model_calls == 0
            assert again.to_json() == t.final, t.query


def test_a_trace_replays_from_its_first_layer_while_the_knowledge_base_is_unchanged(tmp_path):
    model = ScriptedLanguageModel([_echo], yes_prob=0.9)
    with graph_clinic(tmp_path, model=model) as c:
        r = c.consult(QUESTIONS[0], doctor=False, cache=False)
        calls = len(model.calls)
        assert c.replay(r.trace.id).to_json() == r.trace.final and len(model.calls) == calls
