"""The ambiguity step (issue 17 §1): references resolved from the conversation, senses found in the passages,
rewrites that keep the whole question, one clarifying question in interactive use — in the same debug round."""

from __future__ import annotations

from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.reason.ambiguity import assess, resolve_followup
from ragclinic.trace.store import list_traces
from ragclinic.types import Chunk, DocInfo, Hit, Passage

PLANET = "Mercury is the smallest planet in the Solar System and orbits the Sun every 88 days."
ELEMENT = "Mercury is a chemical element, symbol Hg, the only metal that is liquid at room temperature."


def _p(n, doc, title, text, support=0.9):
    chunk = Chunk(f"c{n}", doc, text, 0, len(text), (title,), None, "en", len(text.split()), 0)
    return Passage(n, Hit(chunk, 1.0, (), n), DocInfo(doc, f"{doc}.md", title), support, "fake")


SENSES = [_p(1, "d1", "Mercury (planet)", PLANET), _p(2, "d2", "Mercury (element)", ELEMENT)]


def test_followups_are_resolved_from_the_conversation():
    assert resolve_followup("What was their margin in 2022?", ["How many units did Acme Corporation sell?"]) == \
        "What was Acme Corporation's margin in 2022?"
    assert resolve_followup("How tall is it?", ["When was the Eiffel Tower completed?"]) == \
        "How tall is the Eiffel Tower?"
    assert resolve_followup("它最终注入哪里？", ["长江全长多少公里？"]) == "长江最终注入哪里？"
    assert resolve_followup("它的野生种群有多少只？", ["大熊猫主要吃什么？"]) == "大熊猫的野生种群有多少只？"
    assert resolve_followup("How tall is it?", []) is None  # nothing to resolve from
    assert resolve_followup("How do python snakes kill their prey?", ["x?"]) is None  # the question says it


def test_a_dangling_reference_without_a_conversation_is_ambiguous():
    a = assess("What was its margin last year?", [], 0.8)
    assert a.has_ambiguity and a.ambiguity_type == "reference" and "“its”" in a.clarifying_question
    assert set(a.to_json()) >= {"has_ambiguity", "ambiguity_type", "confidence", "clarifying_question",
                                "rewritten_queries"}


def test_two_senses_in_the_passages_and_rewrites_that_keep_the_question():
    a = assess("What is Mercury?", SENSES, 0.8)
    assert a.has_ambiguity and a.ambiguity_type == "polysemy" and a.confidence >= 0.8
    assert a.clarifying_question == "Do you mean Mercury (planet) or Mercury (element)?"
    assert a.rewritten_queries == ("What is Mercury (Mercury (planet))?", "What is Mercury (Mercury (element))?")
    for r in a.rewritten_queries:  # every word of the question kept, nothing added but the sense
        assert r.startswith("What is Mercury")


def test_a_word_of_the_question_that_picks_a_sense_makes_it_clear():
    assert not assess("How long does the planet Mercury take to orbit the Sun?", SENSES, 0.8).has_ambiguity
    assert not assess("Is the metal mercury liquid at room temperature?", SENSES, 0.8).has_ambiguity
    one = [SENSES[0], _p(2, "d1", "Mercury (planet)", "Mercury has no moons.")]  # one document: one sense
    assert not assess("What is Mercury?", one, 0.8).has_ambiguity
    assert not assess("What is Mercury?", SENSES, 1.0).has_ambiguity  # below the threshold


def _clinic(tmp_path, replies=("Mercury is a planet [1].",)):
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "planet.md").write_text(f"# Mercury (planet)\n\n{PLANET}\n", encoding="utf-8")
    (docs / "element.md").write_text(f"# Mercury (element)\n\n{ELEMENT}\n", encoding="utf-8")
    (docs / "acme.md").write_text("# Acme Corporation report\n\nAcme Corporation sold 2.1 million units in 2023. "
                                  "Its operating margin was 14 percent in 2023 and 11 percent in 2022.\n", encoding="utf-8")
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel(list(replies), yes_prob=0.9), embedder="fake",
                    judge="llm", cache_dir=tmp_path / "cache")
    c.ingest([docs])
    return c


def test_a_followup_keeps_the_users_words_in_the_trace(tmp_path):
    with _clinic(tmp_path, ("The margin was 11 percent in 2022 [1].",)) as c:
        res = c.consult("What was their margin in 2022?", doctor=False,
                        conversation=["How many units did Acme Corporation sell in 2023?"])
        req = res.trace.request
        assert req["question"] == "What was Acme Corporation's margin in 2022?"
        assert req["original"] == "What was their margin in 2022?"
        amb = res.trace.span("gate").outputs["ambiguity"]
        assert amb["original_question"] == "What was their margin in 2022?" and not amb["has_ambiguity"]


def test_interactive_use_asks_once_and_the_reply_stays_in_the_same_round(tmp_path):
    asked = []
    with _clinic(tmp_path) as c:
        res = c.consult("What is Mercury?", interactive=True, reply=lambda q: asked.append(q) or "the planet")
        assert len(asked) == 1 and asked[0].startswith("Do you mean Mercury (")
        assert "Mercury (planet)" in asked[0] and "Mercury (element)" in asked[0] and " or " in asked[0]
        assert "planet" in res.trace.question
        rounds = {t["debug_round_id"] for t in list_traces(c.kb.db, 50)}
        assert len(rounds) == 1  # the clarification, the reply and the answer: one debug round


def test_a_clarification_is_remembered_per_owner_and_reused(tmp_path):
    asked = []

    def reply(q):
        asked.append(q)
        return "the planet"

    with _clinic(tmp_path, ("Mercury is a planet [1].",) * 6) as c:
        first = c.consult("What is Mercury?", interactive=True, reply=reply, owner="user:ann")
        assert first.payload["clarification"]["reused"] is False and len(asked) == 1
        # the same two senses, other words: ann is not asked again, her reply is merged in
        again = c.consult("Mercury?", interactive=True, reply=reply, owner="user:ann")
        assert len(asked) == 1, asked
        assert again.payload["clarification"] == {**again.payload["clarification"], "reused": True,
                                                  "reply": "the planet"}
        assert again.trace.question == "Mercury? the planet"
        assert again.payload["clarification"]["debug_round_id"] == again.trace.debug_round_id
        c.consult("What is Mercury?", interactive=True, reply=reply, owner="user:bob")  # another user: asked
        assert len(asked) == 2
        c.consult("What is Mercury?", interactive=True, reply=reply)  # nobody named: nothing remembered
        assert len(asked) == 3
    with _clinic(tmp_path, ("Mercury is a planet [1].",) * 2) as c:  # kept beside the knowledge base
        c.consult("What is Mercury?", interactive=True, reply=reply, owner="user:ann")
        assert len(asked) == 3


def test_not_interactive_answers_per_sense(tmp_path):
    with _clinic(tmp_path, ("(1) Mercury is a planet [1]. (2) Mercury is an element [2].",)) as c:
        res = c.consult("What is Mercury?")
        assert any(r["treatment"] == "readings" for r in res.payload["repairs"]), res.payload["repairs"]
