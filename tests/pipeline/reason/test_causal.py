"""Causal questions (issue 17 §3): the question type, cause → effect links extracted at ingest with `--causal`
(pronouns written in full), causal-aware ranking, the stated chain in the answer and the evidence's strength."""

from __future__ import annotations

import pytest

from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.gate.qtype import classify_rules
from ragclinic.store.causal import links_of
from ragclinic.text.causal import extract

RAIL = ("Heavy rain in March flooded the river valley. This led to the closure of the main rail line. The closure "
        "caused shortages of fuel in the northern towns.")
OTHER = "The northern railway opened in 1881 and carries freight between the port and the northern towns."
HEDGED = "Job losses may have contributed to the fall in house prices in the town."
CONFLICT_A = "Higher tariffs led to higher steel prices in the region."
CONFLICT_B = "Higher tariffs caused lower steel prices in the region, since imports stopped competing."


@pytest.mark.parametrize("q", ["Why were there fuel shortages?", "What caused the closure?", "What was the impact "
                               "of the rain?", "How did the flooding lead to shortages?", "为什么面粉价格上涨？",
                               "干旱导致了什么？", "暴雪对高速公路有什么影响？", "If the rain had not fallen, would the line "
                               "have closed?"])
def test_causal_questions_are_typed_causal(q):
    assert classify_rules(q)[0] == "causal"


@pytest.mark.parametrize("q", ["What was the total revenue in Q2?", "When was the Eiffel Tower completed?",
                               "How do I reset my password?", "2022年冬奥会在哪里举办？"])
def test_other_questions_are_not(q):
    assert classify_rules(q)[0] != "causal"


def test_links_follow_the_stated_direction_and_pronouns_are_written_in_full():
    links = extract(RAIL)
    assert [(lk.cause, lk.effect) for lk in links] == [
        ("Heavy rain in March flooded the river valley", "the closure of the main rail line"),
        ("The closure", "shortages of fuel in the northern towns")]
    zh = extract("由于持续干旱，小麦产量下降了三成。产量下降导致面粉价格上涨。这进而造成面包店利润减少。")
    assert (zh[0].cause, zh[0].effect) == ("持续干旱", "小麦产量下降了三成")
    assert (zh[2].cause, zh[2].effect) == ("面粉价格上涨", "面包店利润减少")  # 这 → what the sentence before caused
    assert extract("Sales fell because of higher interest rates.")[0].cause == "higher interest rates"
    assert extract(HEDGED)[0].hedged and not links[0].hedged
    assert extract(OTHER) == []


def _clinic(tmp_path, causal: bool, docs: dict[str, str], reply="The fuel shortages came from the closure [1]."):
    root = tmp_path / "docs"
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    c = Clinic.open(tmp_path / ("kb-c" if causal else "kb-p"), model=ScriptedLanguageModel([reply], yes_prob=0.9),
                    embedder="fake", judge="llm", cache_dir=tmp_path / "cache", **({"causal_links": True} if causal else {}))
    c.ingest([root])
    return c


def test_links_are_stored_only_with_causal_and_go_with_their_document(tmp_path):
    with _clinic(tmp_path, False, {"rail.md": RAIL}) as c:
        assert links_of(c.kb.db.conn) == []
    with _clinic(tmp_path, True, {"rail.md": RAIL, "other.md": OTHER}) as c:
        assert len(links_of(c.kb.db.conn)) == 2
        (tmp_path / "docs" / "rail.md").unlink()
        c.ingest([tmp_path / "docs"], sync=True)
        assert links_of(c.kb.db.conn) == []


def test_a_causal_answer_states_the_chain_with_citations(tmp_path):
    with _clinic(tmp_path, True, {"rail.md": RAIL, "other.md": OTHER}) as c:
        res = c.consult("Why were there fuel shortages in the northern towns?", doctor=False, cache=False)
    p = res.payload
    assert p["evidence_strength"] == "strong" and len(p["causal_chain"]) == 2
    assert "Chain: Heavy rain in March flooded the river valley → the closure of the main rail line → shortages" \
        in p["answer"]
    assert any(x["path"].endswith("rail.md") for x in p["citations"])
    assert "causal_ranking" in res.trace.span("scope").outputs


def test_hedged_and_conflicting_evidence_is_said(tmp_path):
    with _clinic(tmp_path, True, {"jobs.md": HEDGED}, "House prices fell after job losses [1].") as c:
        a = c.ask("Why did house prices fall in the town?", doctor=False, cache=False)
        assert a.evidence_strength == "limited" and any("Evidence: limited" in n for n in a.notes)
        assert "Evidence:" not in a.text  # a note beside the answer, not in it
    with _clinic(tmp_path / "x", True, {"a.md": CONFLICT_A, "b.md": CONFLICT_B}, "Tariffs moved prices [1].") as c:
        a = c.ask("What was the impact of higher tariffs on steel prices?", doctor=False, cache=False)
        assert a.evidence_strength == "conflicting" and any("Evidence: conflicting" in n for n in a.notes)


def test_successive_links_of_one_chain_are_not_a_conflict(tmp_path):
    text = "由于持续干旱，小麦产量下降了三成。产量下降导致面粉价格上涨。这进而造成面包店利润减少。"
    with _clinic(tmp_path, True, {"wheat.md": text, "other.md": OTHER}, "面粉价格上涨是因为产量下降[1]。") as c:
        a = c.ask("为什么面粉价格上涨？", doctor=False, cache=False)
    assert a.evidence_strength == "strong" and "因果链: 持续干旱 → 小麦产量下降了三成 → 面粉价格上涨" in a.text


def test_a_chain_does_not_jump_documents_on_one_shared_word(tmp_path):
    steel = "The steel plant closed in 2019. The closure led to the loss of 2,000 jobs in the town."
    with _clinic(tmp_path, True, {"rail.md": RAIL, "steel.md": steel}) as c:
        a = c.ask("What was the impact of the heavy rain in March?", doctor=False, cache=False)
    assert a.evidence_strength == "strong" and "shortages of fuel" in a.text and "jobs" not in a.text.split("Chain:")[1]


def test_no_stated_link_is_said_rather_than_invented(tmp_path):
    with _clinic(tmp_path, True, {"other.md": OTHER}, "The railway carries freight [1].") as c:
        a = c.ask("Why does the northern railway carry freight?", doctor=False, cache=False)
    assert a.evidence_strength == "none" and any("state no causal link" in n for n in a.notes) and not a.causal_chain


def test_a_sentence_that_states_a_link_backwards_is_replaced_by_the_passage():
    from ragclinic.pipeline.reason.causal import fix_direction

    links = [{"cause": "路面结冰", "effect": "交通事故增加", "sentence": "路面结冰导致交通事故增加。", "chunk_id": "c2"},
             {"cause": "Heavy rain", "effect": "the closure of the rail line", "chunk_id": "c1",
              "sentence": "Heavy rain led to the closure of the rail line."}]
    text, fixed = fix_direction("寒潮来袭[1]。交通事故导致路面结冰[2]。", links, {"c2": 2})
    assert text == "寒潮来袭[1]。路面结冰导致交通事故增加[2]。" and fixed[0]["said"] == "交通事故导致路面结冰[2]。"
    text, fixed = fix_direction("The line shut. The closure of the rail line caused heavy rain [1]. So it goes.",
                                links, {"c1": 1})
    assert text == "The line shut. Heavy rain led to the closure of the rail line [1]. So it goes." and len(fixed) == 1
    pron = [{"cause": "Heavy rain flooded the valley", "effect": "the closure of the line", "chunk_id": "c1",
             "sentence": "This led to the closure of the line."}]
    assert fix_direction("The closure of the line led to heavy rain in the valley.", pron, {"c1": 1})[0] == \
        "Heavy rain flooded the valley. This led to the closure of the line [1]."
    same = "Heavy rain caused the closure of the rail line [1]."  # the stated direction: left as written
    assert fix_direction(same, links, {"c1": 1}) == (same, [])
    both = links + [{"cause": "交通事故增加", "effect": "路面结冰", "sentence": "x", "chunk_id": "c3"}]
    assert fix_direction("交通事故导致路面结冰[2]。", both, {})[1] == []  # stated both ways: not ours to pick


@pytest.mark.parametrize("causal", [True, False])
def test_a_backwards_answer_is_fixed_with_or_without_stored_links(tmp_path, causal):
    with _clinic(tmp_path, causal, {"rail.md": RAIL, "other.md": OTHER},
                 "The shortages of fuel in the northern towns led to the closure of the main rail line [1].") as c:
        a = c.ask("Why was the main rail line closed?", doctor=False, cache=False)
    first = a.text.split("\nChain:")[0]
    assert "shortages of fuel in the northern towns led to" not in first, a.text
    assert first.startswith("The closure caused shortages of fuel in the northern towns [1]."), a.text
    assert any(f.startswith("causal_direction_fixed") for f in a.flags)


def test_change_verbs_state_a_link_with_its_direction_in_the_effect():
    links = extract("A cold spring reduced the number of bees in the orchards. Fewer bees led to poor pollination. "
                    "The algae blooms lowered oxygen in the water, which led to fish deaths.")
    assert [(lk.cause, lk.effect) for lk in links] == [
        ("A cold spring", "reduced the number of bees in the orchards"), ("Fewer bees", "poor pollination"),
        ("The algae blooms", "lowered oxygen in the water"),
        ("The algae blooms lowered oxygen in the water", "fish deaths")]
