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
    assert holder("every 24 months.", PASSAGES) == (2, True)
    assert holder("24 months", PASSAGES) == (2, True)
    assert holder("Every 36 months", PASSAGES) == (0, False)  # not what any passage says
    # nearly all words: the passage answers, but the reply is not its words
    assert holder("renew the entry card at the front office every 24 months", PASSAGES) == (2, False)


def test_the_peer_wording_in_the_questions_language():
    en = peer_messages("how often is my door pass redone?", [BADGE])
    assert "insufficient information" in en[0].content and "Document 1: " + BADGE in en[1].content
    zh = peer_messages("门卡多久换一次？", ["员工每24个月更换一次出入卡。"])
    assert "信息不足" in zh[0].content and "文档1：" in zh[1].content


def test_a_weak_refusal_turns_into_an_answer_only_when_the_reading_finds_it():
    found = second_reading("how often is my door pass redone?", WEAK, PASSAGES,
                           ScriptedLanguageModel(["every 24 months"]), "best evidence score")
    assert found.route == "answer" and found.reread == 2 and "read again" in found.reason
    assert found.reread_reply == "every 24 months"  # the passage's own words: the answer as the model gave it
    near = second_reading("how often is my door pass redone?", WEAK, PASSAGES,
                          ScriptedLanguageModel(["renew the entry card at the front office every 24 months."]),
                          "best evidence score")
    assert near.reread == 2 and near.reread_reply == ""  # answered from [2], but not in its words: asked again
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
        # the second reading is the gate's call, and its words are the answer: the model is not asked again
        assert [c.layer for c in trace.model_calls] == ["gate"]
        n = state.decision.reread
        assert state.answer.text == f"every 24 months [{n}]." and [c.n for c in state.answer.citations] == [n]
        assert "entry card" in next(p.chunk.text for p in state.passages if p.n == n)
    finally:
        kb.close()


def test_the_structured_answer_takes_the_whole_of_what_the_reading_said(tmp_path):
    """Asked again after the reading, the 1.5B model's short answer took part of it ("8" for "6 到 8 个字符")."""
    pipe, lm, kb = _pipe(tmp_path, [(r"^Documents:", "every 24 months.")])
    try:
        state, trace = pipe.ask("how often is my door pass redone?")
        assert "every 24 months" in state.answer.text and len(lm.calls) == 1
        assert trace.span("gate").outputs["decision"]["reread_reply"] == "every 24 months"
    finally:
        kb.close()


def test_a_decline_over_passages_the_gate_answered_from_is_read_again(tmp_path):
    """The schema's status came out not_in_documents where the simple peer answered from the same passages."""
    declined = json.dumps({"status": "not_in_documents", "answer": "", "evidence": []})
    kb = build_kb(tmp_path / "a", {"badge.txt": BADGE, "locker.txt": LOCKER}, judge="lexical")
    lm = ScriptedLanguageModel([declined], rules=[(r"^Documents:", "every 24 months")])
    try:
        state, _ = Pipeline(kb, lm=lm).ask("how often is the entry card renewed?")
        assert state.decision.route == "answer" and not state.decision.reread  # the gate answered at once
        assert not state.answer.refused and "every 24 months" in state.answer.text, state.answer
        assert any(f.startswith("answer_regenerated: the model said the documents do not say, a second reading")
                   for f in state.answer.flags)
        assert len(lm.calls) == 2  # the declined answer, the reading; its words are the answer
    finally:
        kb.close()
    kb = build_kb(tmp_path / "b", {"badge.txt": BADGE, "locker.txt": LOCKER}, judge="lexical")
    lm = ScriptedLanguageModel([declined], rules=[(r"^Documents:", "insufficient information")])
    try:
        state, _ = Pipeline(kb, lm=lm).ask("how often is the entry card renewed?")
        assert state.answer.refused and len(lm.calls) == 2  # read again, nothing found: the refusal stands
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


SUDO = ("这句话出自一位老系统管理员的回忆录。如今只要在 /etc/sudoers 中加入 “%admin ALL=/sbin/reboot” 这一行，"
        "就能只让 admin 组的成员重启机器。")


def test_a_how_to_reply_is_held_by_the_passage_with_its_commands():
    """The peer's reading of a how-to question explains in its own words and names its document; what must be in
    the passage is every command, path and name it writes (a Chinese reply), its last, cut-off word excepted."""
    passages = [_p(1, "sudo 的日志默认写在 /var/log/auth.log 中。"), _p(2, SUDO)]
    reply = "在文档2中，你可以通过在 `/etc/sudoers` 文件中添加以下行来实现：\n\n```\n%admin ALL=/sb"
    assert holder(reply, passages, cut=True) == (2, False)
    assert holder(reply, passages, cut=False) == (0, False)  # "sb" as a whole word is in no passage
    assert holder("在文档1中，你可以通过修改 /etc/shadow 来实现", passages) == (0, False)  # a path no passage has
    assert holder("根据文档2，在 /etc/sudoers 中加入 “%admin ALL=/sbin/reboot” 这一行", passages) == (2, True)
