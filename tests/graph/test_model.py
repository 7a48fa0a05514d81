"""The model extractor and summarizer (graph/model.py): JSON checked against the schema, relations only between
extracted entities, a bad reply extracted by the rules instead (counted), summaries citing their points."""

from __future__ import annotations

import json

import pytest

from ragclinic.graph.model import PREFILL, ModelExtractor, parse_reply, summarizer
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.store import graph as store
from ragclinic.store.graph import Point

from graph.helpers import graph_clinic

GOOD = {"entities": [{"name": "Piotr Nowak", "type": "person"}, {"name": "Gdynia Plant", "type": "location"},
                     {"name": "weld corrosion", "type": "concept"}],
        "relations": [{"source": "Piotr Nowak", "target": "Gdynia Plant", "relation": "manages",
                       "description": "Piotr Nowak manages the Gdynia Plant.", "confidence": 0.9},
                      {"source": "Piotr Nowak", "target": "Someone Else", "relation": "knows", "confidence": 0.5}]}


def _continuation(obj: dict) -> str:
    """What the model writes after the prefill."""
    return json.dumps(obj)[len(PREFILL):]


def test_a_valid_reply_becomes_typed_mentions_and_relations_between_them():
    ex = ModelExtractor(ScriptedLanguageModel([_continuation(GOOD)]))
    g = ex.extract_one("c1", "d1", "Piotr Nowak manages the Gdynia Plant. He found weld corrosion.", "en")
    assert {(m.entity, m.type) for m in g.mentions} == {("piotr nowak", "person"), ("gdynia plant", "location"),
                                                       ("weld corrosion", "concept")}
    assert [(r.source, r.target, r.type, r.confidence) for r in g.relations] == [
        ("piotr nowak", "gdynia plant", "manages", 0.9)]  # the relation to an entity it did not extract is dropped
    assert next(m for m in g.mentions if m.entity == "weld corrosion").sentence == 1
    assert ex.fallbacks == 0 and ex.calls == 1


@pytest.mark.parametrize("reply", ['"}]}', "not json at all", '"x"}], "relations": 5}'])
def test_a_reply_with_no_valid_entity_is_extracted_by_the_rules_and_counted(reply):
    ex = ModelExtractor(ScriptedLanguageModel([reply]))
    g = ex.extract_one("c1", "d1", "Piotr Nowak manages the Gdynia Plant.", "en")
    assert ex.fallbacks == 1
    assert {"piotr nowak", "gdynia plant"} <= {m.entity for m in g.mentions}


def test_a_reply_cut_off_by_the_token_limit_keeps_its_complete_items():
    cut = json.dumps(GOOD)[:json.dumps(GOOD).index('"Someone Else"') + 5]  # inside the second relation
    found, repaired = parse_reply(cut)
    assert [e.name for e in found.entities] == ["Piotr Nowak", "Gdynia Plant", "weld corrosion"]
    assert [r.relation for r in found.relations] == ["manages"] and repaired == 1
    cut = json.dumps(GOOD)[:json.dumps(GOOD).index('"Gdynia Plant"') + 45]  # inside the entities
    found, _ = parse_reply(cut)
    assert [e.name for e in found.entities] == ["Piotr Nowak", "Gdynia Plant"] and found.relations == []


def test_parse_reply_repairs_types_drops_bad_items_and_names_what_is_wrong():
    found, repaired = parse_reply('{"entities": [{"name": "A", "type": "planet"}, {"name": "B", "type": "Organization"},'
                                  ' {"name": "", "type": "person"}], "relations": [{"source": "A", "target": "B", '
                                  '"relation": "orbits", "confidence": 7}]}')
    assert [(e.name, e.type) for e in found.entities] == [("A", "concept"), ("B", "organisation")]
    assert found.relations == [] and repaired == 4  # two types mapped, one empty name and one confidence dropped
    with pytest.raises(ValueError, match="no valid entity"):
        parse_reply('{"entities": [{"name": "", "type": "person"}]}')
    with pytest.raises(ValueError, match="no JSON"):
        parse_reply("none")


def test_the_model_summary_must_cite_its_points_else_the_extractive_one_is_kept():
    points = [Point("Piotr Nowak manages the Gdynia Plant.", "c1", "d1"), Point("Corrosion was found.", "c2", "d2")]
    text, by = summarizer(ScriptedLanguageModel(["Piotr Nowak runs the plant where corrosion was found [1][2]."]))(
        "Piotr Nowak", ["Piotr Nowak"], points)
    assert by == "fake-scripted" and text.endswith("[1][2].")
    text, by = summarizer(ScriptedLanguageModel(["A summary without citations."]))("T", ["T"], points)
    assert by == "extractive" and "Corrosion was found." in text
    text, by = summarizer(ScriptedLanguageModel(["Cites a point that is not there [7]."]))("T", ["T"], points)
    assert by == "extractive"


def test_model_mode_at_ingest_uses_the_model_and_writes_model_summaries(tmp_path):
    model = ScriptedLanguageModel([_continuation(GOOD)], rules=[(r"^Entities:", "Nowak manages the plant [1].")])
    with graph_clinic(tmp_path, mode="model", model=model) as c:
        rows = c.kb.db.conn.execute("SELECT DISTINCT mode FROM graph_chunks").fetchall()
        assert rows == [("model",)]
        types = {r[0] for r in c.kb.db.conn.execute("SELECT DISTINCT type FROM graph_mentions")}
        assert types <= {"person", "organisation", "concept", "technology", "event", "location"}
        found = store.communities(c.kb.db.conn)
        assert found and all(x.summary_by == "fake-scripted" for x in found)


def test_model_mode_without_a_model_says_how_to_get_one(tmp_path):
    from ragclinic.errors import ConfigError

    with pytest.raises(ConfigError, match="--graph fast"):
        graph_clinic(tmp_path, mode="model", model=None)
