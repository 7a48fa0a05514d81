"""An answer that breaks the question's year or ordinal is answered again from a passage that matches, or refused
with the reason — never returned as it is ("the 2021 NBA Draft … November 18, 2020")."""

from __future__ import annotations

import re

import pytest

from helpers import build_kb, passage
from helpers import claim as _claim
from ragclinic.eval.answer_form import form_violations
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.constraint_check import (absent_names, absent_note, broken_constraints,
                                                          matching_passages, refusal_reason)
from ragclinic.pipeline.runner import Pipeline

D2020 = "The 2020 NBA Draft was held on Wednesday, November 18, 2020, after the pandemic delayed the season."
D2021 = "The 2021 NBA Draft was held on July 29, 2021, at the Barclays Center in Brooklyn."


def _p(n: int, text: str):
    return passage(n, text, "en")


def test_an_answer_naming_another_year_from_another_years_passage_is_broken():
    ps = [_p(1, D2020), _p(2, D2021)]
    q = "When was the 2021 NBA Draft?"
    broken = broken_constraints(q, [_claim("Wednesday, November 18, 2020", 1)], ps)
    assert len(broken) == 1 and broken[0].others == ("2020",)
    assert matching_passages(q, ps, broken) == (ps[1],)
    assert "2020" in refusal_reason(q, broken) and "2021" in refusal_reason(q, broken)


def test_a_short_answer_resting_on_another_years_passage_is_broken_too():
    ps = [_p(1, "The 2019 championship was won by the Toronto Raptors.")]
    assert broken_constraints("Who won the 2022 championship?", [_claim("The Toronto Raptors", 1)], ps)


def test_answers_that_keep_the_constraint_are_not_broken():
    ps = [_p(1, D2020), _p(2, D2021)]
    q = "When was the 2021 NBA Draft?"
    assert broken_constraints(q, [_claim("July 29, 2021", 2)], ps) == []
    # another year named beside the asked one, from a passage that has the asked one
    assert broken_constraints(q, [_claim("July 29, 2021, a year after the 2020 draft", 2)], ps) == []
    # a question without a year or ordinal has nothing to break
    assert broken_constraints("When was the NBA Draft?", [_claim("November 18, 2020", 1)], ps) == []
    # a passage that does not mention years at all does not contradict
    ps3 = [_p(3, "The draft was held in Brooklyn.")]
    assert broken_constraints(q, [_claim("In Brooklyn", 3)], ps3) == []


def test_ordinals_in_both_languages():
    ps = [_p(1, "第五届立法会于2012年选出，共70个议席。")]
    q = "第六届立法会有多少个议席？"
    assert broken_constraints(q, [_claim("70个议席", 1)], ps)
    assert "第六届" in refusal_reason(q, broken_constraints(q, [_claim("70个议席", 1)], ps))


def _cite(name: str, reply: str):
    """A fake model that answers with ``reply`` citing the passage whose line holds ``name``."""
    def answer(messages):
        prompt = messages[-1].content
        n = next((m.group(1) for m in re.finditer(r"^\[(\d+)\]([^\n]*)", prompt, re.M) if name in m.group(2)), "1")
        return reply.replace("N", n)
    return answer


def test_the_pipeline_answers_again_from_the_passage_with_the_asked_year(tmp_path):
    kb = build_kb(tmp_path, {"draft2020.md": "# Draft 2020\n\n" + D2020 + "\n",
                             "draft2021.md": "# Draft 2021\n\n" + D2021 + "\n"})
    calls = []

    def model(messages):
        calls.append(messages[-1].content)
        if len(calls) == 1:
            return _cite("November", '{"status": "answered", "answer": "Wednesday, November 18, 2020", "evidence": [N]}')(messages)
        return _cite("July", '{"status": "answered", "answer": "July 29, 2021", "evidence": [N]}')(messages)

    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([model], yes_prob=0.9)).ask("When was the 2021 NBA Draft held?")
    a = state.answer
    assert a.route == "answer" and a.text.startswith("July 29, 2021 [") and "2020" not in a.text
    assert any(f.startswith("constraint_regenerated:") for f in a.flags)
    assert "November" not in calls[1]  # the second prompt holds only the passage with the asked year
    kb.close()


def test_the_pipeline_refuses_with_the_reason_when_no_passage_has_the_asked_year(tmp_path):
    kb = build_kb(tmp_path, {"draft2020.md": "# Draft 2020\n\n" + D2020 + "\n"})
    model = _cite("November", '{"status": "answered", "answer": "Wednesday, November 18, 2020", "evidence": [N]}')
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([model], yes_prob=0.9)).ask("When was the 2021 NBA Draft held?")
    a = state.answer
    assert a.refused and a.route == "refuse"
    assert a.text == "The documents describe the 2020 NBA Draft; the question asks about 2021."
    assert any(f.startswith("constraint_refused:") for f in a.flags)
    kb.close()


def test_a_name_no_passage_mentions_is_noted_and_a_title_no_passage_has_breaks_the_answer():
    """"Rags Ragland is the star of which show?" over passages about James Mulgrew: the answer is about someone else —
    said beside it (passages often name a person once, then say "he"); a 《title》 is exact and breaks it."""
    ps = [_p(1, "James Mulgrew is the star of the comedy sketch show And There's More."),
          _p(2, "And There's More is a British comedy sketch show.")]
    q = "Rags Ragland is the star of which comedy sketch show?"
    assert [n.value for n in absent_names(q, ps)] == ["Rags Ragland"]
    assert absent_note(q, absent_names(q, ps)) == "The documents do not mention Rags Ragland."
    assert broken_constraints(q, [_claim("And There's More", 1)], ps) == []  # a note, not a refusal
    # one distinctive word of the name is enough; the question's first word alone is not a name; punctuation
    assert absent_names("Which show does Jimmy Mulgrew star in?", ps) == []
    assert absent_names("Sketch shows starring James Mulgrew?", ps) == []
    assert absent_names('Was "And There\'s More," a sketch show?', ps) == []
    # a 《title》 no passage has
    zh = [_p(1, "《小时代》是郭敬明的小说。")]
    broken = broken_constraints("《悲伤逆流成河》的作者是谁？", [_claim("郭敬明", 1)], zh)
    assert broken and refusal_reason("《悲伤逆流成河》的作者是谁？", broken) == "文档中没有提到《悲伤逆流成河》。"
    assert broken_constraints("《小时代》的作者是谁？", [_claim("郭敬明", 1)], zh) == []
    # a quoted pattern ("机器名.local": any host name ending in .local) is mentioned by its literal part
    mdns = [_p(1, "libnss-mdns 插件包提供 mDNS 的主机名解析，\".local\"结尾的主机名使用组播 DNS。")]
    assert absent_names("想用“机器名.local”互相访问，要装什么？", mdns) == []
    assert [n.text for n in absent_names("想用“机器名.lan”互相访问，要装什么？", mdns)] == ["“机器名.lan”"]


def test_the_pipeline_answers_and_notes_a_name_no_passage_mentions(tmp_path):
    kb = build_kb(tmp_path, {"show.md": "# Show\n\nJames Mulgrew is the star of the comedy sketch show And There's "
                                        "More.\n"})
    reply = '{"status": "answered", "answer": "And There\'s More", "evidence": [1]}'
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "Rags Ragland is the star of which comedy sketch show?")
    a = state.answer
    assert a.route == "answer" and "The documents do not mention Rags Ragland." in a.notes
    assert "Rags" not in a.text and any(f.startswith("name_not_in_passages:") for f in a.flags)
    kb.close()


def test_a_number_no_passage_has_beside_a_real_one_does_not_switch_the_checks_off(tmp_path):
    """evidence [n, 9]: 9 is dropped (and flagged); the claim is still checked against [n] — here it breaks the
    question's year and is refused — and no mark is printed for a passage that is not cited."""
    kb = build_kb(tmp_path, {"draft2020.md": "# Draft 2020\n\n" + D2020 + "\n"})
    model = _cite("November", '{"status": "answered", "answer": "Wednesday, November 18, 2020", "evidence": [N, 9]}')
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([model], yes_prob=0.9)).ask("When was the 2021 NBA Draft held?")
    a = state.answer
    assert a.refused and any(f.startswith("constraint_refused:") for f in a.flags)
    assert any(f.startswith("invalid_citation: the model cited [9]") for f in a.flags)
    kb.close()


# The refusal names the thing in the question's words (issue 51, item 11): asked about the first season with
# passages about the tenth, "The documents describe the tenth season; the question asks about the first." — never
# "The documents give 10 for this; the question asks about first." Users' phrasings, both languages, years too;
# (question, passage, answer, refusal). HELD_OUT was kept aside while the wording was written.
DEV = [
    ("Who won the first season of Top Chef?", "Kristen Kish won the tenth season of Top Chef.", "Kristen Kish",
     "The documents describe the tenth season; the question asks about the first."),
    ("Who presented the 1st series of Bake Off?", "The tenth series of Bake Off was presented by Noel Fielding.",
     "Noel Fielding", "The documents describe the tenth series; the question asks about the 1st."),
    ("第一季的冠军是谁？", "第十季的冠军是张三。", "张三", "文档描述的是第十季；问题问的是第一季。"),
    ("Who won the 2021 season?", "The 2020 season was won by the Lakers.", "The Lakers",
     "The documents describe the 2020 season; the question asks about 2021."),
    ("2021年NBA选秀在哪天举行？", "2020年NBA选秀于11月18日举行。", "11月18日", "文档描述的是2020年NBA选秀；问题问的是2021年。"),
]
HELD_OUT = [
    ("Who was the First winner of the show?", "Anna Lee was the tenth winner of the show.", "Anna Lee",
     "The documents describe the tenth winner; the question asks about the first."),
    ("Who won the first season?", "Ben finished third in the tenth season.", "Ben",
     "The documents describe the tenth season; the question asks about the first."),
    ("第六届立法会有多少个议席？", "第五届立法会于2012年选出，共70个议席。", "70个议席", "文档描述的是第五届立法会；问题问的是第六届。"),
    ("Which team won the championship in 2021?", "The Lakers won the 2020 championship.", "The Lakers",
     "The documents give 2020 for this; the question asks about 2021."),
    ("Who won the third season?", "The 1st season was won by Kelly Clarkson.", "Kelly Clarkson",
     "The documents describe the 1st season; the question asks about the third."),
    ("第1季的冠军是谁？", "第十季冠军是张三。", "张三", "文档描述的是第十季；问题问的是第1季。"),
]


@pytest.mark.parametrize("question, passage, answer, reason", DEV + HELD_OUT)
def test_the_refusal_names_the_thing_in_the_questions_words(question, passage, answer, reason):
    broken = broken_constraints(question, [_claim(answer, 1)], [_p(1, passage)])
    assert broken
    got = refusal_reason(question, broken)
    assert got == reason
    assert not re.search(r"asks about (?!the )[a-z]", got)  # never "asks about first"
    assert form_violations({"answer": got, "citations": []}) == []  # fixed wording, as the form checks know it


def test_a_claim_naming_another_ordinal_is_described_from_its_own_words():
    ps = [_p(1, "Top Chef has aired on Bravo since 2006.")]
    broken = broken_constraints("Who won the first season?", [_claim("Kristen Kish won the tenth season", 1)], ps)
    assert refusal_reason("Who won the first season?", broken) == (
        "The documents describe the tenth season; the question asks about the first.")


def test_a_tool_a_chinese_question_names_that_no_passage_mentions_breaks_the_answer():
    """Issue 52: "ufw 防火墙怎么设置成开机自动启用？" over passages about other firewalls was answered with another tool's
    script; the peer said it did not know. A Latin-letter term of a Chinese question is a hard constraint."""
    ps = [_p(1, "Shorewall 的初始化脚本在开机时加载防火墙规则。"), _p(2, "iptables-persistent 软件包会在启动时恢复规则。")]
    q = "ufw 防火墙怎么设置成开机自动启用？"
    assert [n.text for n in absent_names(q, ps)] == ["ufw"]
    broken = broken_constraints(q, [_claim("通过 Shorewall 的初始化脚本启用", 1)], ps)
    assert broken and refusal_reason(q, broken) == "文档中没有提到ufw。"
    # mentioned: any case, glued to Chinese, "Wi-Fi" written "WiFi"; quoted text is the quoted constraint's
    assert absent_names("Shorewall防火墙开机怎么加载？", ps) == []
    assert absent_names("SHOREWALL 的规则什么时候加载？", [_p(1, "shorewall规则在开机时加载。")]) == []
    assert absent_names("Wi-Fi 密码存在哪里？", [_p(1, "WiFi 密码保存在 /etc/NetworkManager 下。")]) == []
    assert [n.text for n in absent_names("怎么用 nftables 放行 22 端口？", ps)] == ["nftables"]
    # English questions keep names as notes: this is for Chinese questions only
    assert broken_constraints("How do I enable ufw at boot?", [_claim("Use Shorewall's init script", 1)], ps) == []


def test_the_pipeline_refuses_a_chinese_question_about_a_tool_no_passage_names(tmp_path):
    kb = build_kb(tmp_path, {"fw.md": "# 防火墙\n\nShorewall 的初始化脚本在开机时加载防火墙规则。\n"})
    reply = '{"status": "answered", "points": [{"text": "通过 Shorewall 初始化脚本设置开机启用", "evidence": [1]}]}'
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask("ufw 防火墙怎么设置成开机自动启用？")
    assert state.answer.route == "refuse" and state.answer.text == "文档中没有提到ufw。"
    kb.close()
