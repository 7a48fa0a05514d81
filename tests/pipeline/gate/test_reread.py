"""Issue 52: before a refusal on weak evidence the model reads the passages once with the simple peer's wording;
the gate answers only when the reply is not the refusal phrase and one passage states it."""

from __future__ import annotations

import json

from helpers import build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.gate.reread import holder, peer_messages, reread, second_reading
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Chunk, DocInfo, GateDecision, Hit, Passage

BADGE = "Employees renew their entry card every 24 months at the front office."
LOCKER = "Lockers on the third floor are assigned for one year and cleared every August."
CANTEEN = "The canteen serves breakfast from 7:30 and closes at 15:00 on Fridays."


def _p(n: int, text: str) -> Passage:
    chunk = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, "en", 12, 0)
    return Passage(n, Hit(chunk, 1.0, (), n), DocInfo(f"d{n}", f"d{n}.txt", ""))


PASSAGES = [_p(1, LOCKER), _p(2, BADGE), _p(3, CANTEEN)]
WEAK = GateDecision("refuse", "factual", 0.07, "best evidence score 0.07 < 0.19 threshold (scored by v)")


def test_the_reply_must_be_stated_by_a_passage():
    assert holder("every 24 months.", PASSAGES) == 2
    assert holder("24 months", PASSAGES) == 2
    assert holder("Every 36 months", PASSAGES) == 0  # not what any passage says
    assert holder("renew the entry card at the front office every 24 months", PASSAGES) == 2  # nearly all words


def test_the_peer_wording_in_the_questions_language():
    en = peer_messages("how often is my door pass redone?", [BADGE])
    assert "insufficient information" in en[0].content and "Document 1: " + BADGE in en[1].content
    zh = peer_messages("门卡多久换一次？", ["员工每24个月更换一次出入卡。"])
    assert "信息不足" in zh[0].content and "文档1：" in zh[1].content


def test_a_weak_refusal_turns_into_an_answer_only_when_the_reading_finds_it():
    found = second_reading("how often is my door pass redone?", WEAK, PASSAGES,
                           ScriptedLanguageModel(["every 24 months"]), "best evidence score")
    assert found.route == "answer" and found.reread == 2 and "read again" in found.reason
    none = second_reading("how often is my parking permit renewed?", WEAK, PASSAGES,
                          ScriptedLanguageModel(["insufficient information"]), "best evidence score")
    assert none.route == "refuse" and none.reread == 0 and "found no answer" in none.reason
    guessed = second_reading("how often is my parking permit renewed?", WEAK, PASSAGES,
                             ScriptedLanguageModel(["every 12 months"]), "best evidence score")
    assert guessed.route == "refuse"  # a reply no passage states is no answer
    lm = ScriptedLanguageModel(["every 24 months"])
    empty = GateDecision("refuse", "factual", 0.0, "no passage in scope matched the question")
    assert second_reading("q?", empty, PASSAGES, lm, "best evidence score") == empty  # not a weak-evidence refusal
    answered = GateDecision("answer", "factual", 0.9, "best evidence score 0.90 ≥ 0.19")
    assert second_reading("q?", answered, PASSAGES, lm, "best evidence score") == answered
    assert not lm.calls and reread("q?", PASSAGES, lm).passage == 2 and len(lm.calls) == 1


def _pipe(tmp_path, rules, **settings):
    docs = {"badge.txt": BADGE, "locker.txt": LOCKER, "canteen.txt": CANTEEN}
    kb = build_kb(tmp_path, docs, judge="lexical", **settings)
    answer = json.dumps({"status": "answered", "answer": "every 24 months", "evidence": [1]})
    lm = ScriptedLanguageModel([answer], rules=rules)
    return Pipeline(kb, lm=lm), lm, kb


def test_the_pipeline_answers_a_paraphrase_it_used_to_refuse(tmp_path):
    pipe, lm, kb = _pipe(tmp_path, [(r"^Documents:", "every 24 months")])
    try:
        state, trace = pipe.ask("how often is my door pass redone?")
        assert not state.answer.refused and "24 months" in state.answer.text, state.answer
        assert state.decision.reread and "read again" in state.decision.reason
        assert [c.layer for c in trace.model_calls][:1] == ["gate"]  # the second reading is the gate's call
    finally:
        kb.close()


def test_the_refusal_stands_when_the_reading_finds_nothing_or_the_setting_is_off(tmp_path):
    pipe, lm, kb = _pipe(tmp_path / "a", [(r"^Documents:", "insufficient information")])
    try:
        state, _ = pipe.ask("how often is my parking permit renewed?")
        assert state.answer.refused and "found no answer" in state.decision.reason
    finally:
        kb.close()
    pipe, lm, kb = _pipe(tmp_path / "b", [(r"^Documents:", "every 24 months")], gate_reread=False)
    try:
        state, _ = pipe.ask("how often is my door pass redone?")
        assert state.answer.refused and not any("Documents:" in m.content for _, ms in lm.calls for m in ms)
    finally:
        kb.close()
