"""Issue 55: an answer about another thing than the one asked (another kind of leave, another size, another quarter,
another grade of goods) is answered again from a passage that has the asked thing, or refused naming both; a
question about the thing the passage does state, a paraphrase, and a comparison are left alone. The examples are
written here, not taken from any evaluation set."""

from __future__ import annotations

import json

from helpers import build_kb
from helpers import claim as _claim
from helpers import passage as _p
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.subject_check import contrasts, refusal_reason
from ragclinic.pipeline.runner import Pipeline

POLICY = ("Time off. Every employee gets 12 days of paid sick leave a year. Study leave of up to 5 days is granted "
          "for approved courses.")
FARES = "| Ticket | Price |\n|---|---|\n| Adult single | €3.40 |\n| Adult day pass | €9.00 |"
DEPOT = "华东仓：常温货每托盘每天收取仓储费2元，退货每单收取处理费8元。"
SALES = "2023年第二季度销售额为1,150万元，同比增长12%。"
BADGE = "Staff must renew their access badge every 18 months."


def test_another_thing_of_the_same_kind_is_a_contrast():
    found = contrasts("how many days of parental leave can I take?", [_claim("12 days", 1)], [_p(1, POLICY)])
    assert found and found[0].asked == "parental leave" and found[0].stated in ("sick leave", "study leave")
    found = contrasts("What does a child day pass cost?", [_claim("€9.00", 1)], [_p(1, FARES)])
    assert [(c.asked, c.stated) for c in found] == [("child day", "adult day")]
    assert [(c.asked, c.stated) for c in contrasts("冷链货每托盘每天的仓储费是多少？", [_claim("2元", 1)],
                                                   [_p(1, DEPOT, "zh")])] == [("冷链货", "常温货")]
    assert [(c.asked, c.stated) for c in contrasts("2023年第三季度销售额是多少？", [_claim("1,150万元", 1)],
                                                   [_p(1, SALES, "zh")])] == [("三季度", "二季度")]


def test_the_stated_thing_a_paraphrase_and_a_comparison_are_left_alone():
    assert contrasts("how many days of sick leave do I get?", [_claim("12 days", 1)], [_p(1, POLICY)]) == []
    assert contrasts("What does an adult day pass cost?", [_claim("€9.00", 1)], [_p(1, FARES)]) == []
    assert contrasts("常温货每托盘每天的仓储费是多少？", [_claim("2元", 1)], [_p(1, DEPOT, "zh")]) == []
    assert contrasts("how often do I have to get my building pass redone?", [_claim("every 18 months", 1)],
                     [_p(1, BADGE)]) == []  # nothing in the passage to contrast "building" with
    assert contrasts("What is the current price of an adult single?", [_claim("€3.40", 1)], [_p(1, FARES)]) == []
    assert contrasts("how many days of parental leave can I take?", [_claim("12 days", 2)], [_p(1, POLICY)]) == []
    # the answer names the asked thing, which another passage shown has: it cites the wrong one, no contrast
    parental = _p(2, "Parental leave is 16 weeks at full pay.")
    assert contrasts("how many days of parental leave can I take?", [_claim("Parental leave is 16 weeks", 1)],
                     [_p(1, POLICY), parental]) == []
    # echoing the question's words does not make it about the asked thing when no passage has it
    assert contrasts("how many days of parental leave can I take?", [_claim("Parental leave is 12 days", 1)],
                     [_p(1, POLICY)]) != []


def test_the_refusal_names_both_things_in_the_questions_language():
    found = contrasts("how many days of parental leave can I take?", [_claim("12 days", 1)], [_p(1, POLICY)])
    assert refusal_reason("how many days of parental leave can I take?", found).endswith(
        "; they do not mention parental leave.")
    zh = contrasts("冷链货每托盘每天的仓储费是多少？", [_claim("2元", 1)], [_p(1, DEPOT, "zh")])
    assert refusal_reason("冷链货每托盘每天的仓储费是多少？", zh) == "文档给出的是常温货的信息，没有提到冷链货。"


def test_the_pipeline_refuses_an_answer_about_the_other_thing(tmp_path):
    kb = build_kb(tmp_path, {"policy.md": "# Time off\n\n" + POLICY + "\n"})
    reply = json.dumps({"status": "answered", "answer": "12 days", "evidence": [1]})
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "how many days of parental leave can I take?")
    a = state.answer
    assert a.refused and "parental leave" in a.text and "12 days" not in a.text, a
    assert any(f.startswith("subject_refused:") for f in a.flags)
    again, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "how many days of sick leave can I take?")
    assert not again.answer.refused and again.answer.text.startswith("12 days"), again.answer
    kb.close()
