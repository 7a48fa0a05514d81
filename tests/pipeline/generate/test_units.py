"""Issue 52: a bare number answering "how many <unit>" is given the unit as the cited passage writes it; an answer
with words beside its number, a question that counts in no unit, and a passage that does not write the unit after
that number are left as they are."""

from __future__ import annotations

import json

from helpers import build_kb
from helpers import claim as _claim
from helpers import passage as _p
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.units import asked_unit, with_unit
from ragclinic.pipeline.runner import Pipeline

CHART = "Serenity is the band's second album. Its lead single also spent ten weeks at number one on the dance chart."
ROOM = "The Atlas meeting room on the third floor seats 40 people and has a projector."
SUDO = "默认情况下，sudo 在 15 分钟内不会再次要求输入密码，这个时长可以在 sudoers 中修改。"


def test_the_unit_a_question_counts_in():
    assert asked_unit("How many weeks was it at number one?") == "weeks"
    assert asked_unit("roughly how many people can the Atlas room take?") == "people"
    assert asked_unit("sudo 输过一次密码以后，多少分钟内不用再输？") == "分钟"
    assert asked_unit("这个方案一共有几个等级？") == "个"
    assert asked_unit("Who opened the bridge?") == "" and asked_unit("how much does it cost?") == ""


def test_a_bare_number_gets_the_unit_its_passage_writes():
    assert with_unit("How many weeks did the lead single spend at number one?", [_claim("ten", 1)],
                     [_p(1, CHART)]) == ("ten weeks", 1)
    assert with_unit("roughly how many people can the Atlas room take?", [_claim("40 [1]", 1)],
                     [_p(1, ROOM)]) == ("40 people", 1)
    assert with_unit("sudo 输过一次密码以后，多少分钟内不用再输？", [_claim("15", 1)], [_p(1, SUDO, "zh")]) == ("15 分钟", 1)


def test_what_is_left_alone():
    q = "How many weeks did the lead single spend at number one?"
    assert with_unit(q, [_claim("ten weeks", 1)], [_p(1, CHART)]) is None  # already says it
    assert with_unit(q, [_claim("about ten, then it fell", 1)], [_p(1, CHART)]) is None  # not a bare number
    assert with_unit(q, [_claim("ten", 2)], [_p(1, CHART), _p(2, ROOM)]) is None  # its passage has no "ten weeks"
    assert with_unit("How many times was it reissued?", [_claim("2", 1)], [_p(1, "It was reissued twice.")]) is None
    assert with_unit("Which chart did it top?", [_claim("ten", 1)], [_p(1, CHART)]) is None  # counts nothing
    assert with_unit(q, [_claim("ten", 1), _claim("eleven", 1)], [_p(1, CHART)]) is None  # two claims


def test_the_pipeline_answers_with_the_number_and_its_unit(tmp_path):
    kb = build_kb(tmp_path, {"chart.md": "# Serenity\n\n" + CHART + "\n"})
    reply = json.dumps({"status": "answered", "answer": "ten", "evidence": [1]})
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "How many weeks did the lead single from Serenity spend at number one?")
    a = state.answer
    assert a.route == "answer" and a.text.startswith("ten weeks [1]"), a
    assert any(f.startswith("unit_added:") for f in a.flags)
    kb.close()
