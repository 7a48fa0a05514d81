"""The answer-form checker: an answer reads like an answer — no talk about passages, documents or sources, no
broken citation marks, no file or chunk ids, no notes glued into its text. Examples in a user's words, as
`ragclinic ask --json` returns them (issue 33)."""

from __future__ import annotations

import pytest

from ragclinic.eval.answer_form import _source_talk, form_violations
from ragclinic.pipeline.gate.templates import render


def ask(text: str, cited=(1, 2, 3, 4, 5), refused: bool = False, **citation) -> dict:
    """An `ask --json` object with ``text`` as its answer and passages ``cited`` listed as its citations."""
    return {"answer": text, "refused": refused,
            "citations": [{"n": n, "chunk_id": "", "doc_id": "", "text": "", "path": "", "title": "",
                           **citation} for n in cited]}


VIOLATING_EN = [
    # the issue's own examples
    ("The CEO of Google in 2021 is Sundar Pichai [2]. This is stated in Passage [1] and [2].", "source_talk"),
    ("The 2021 NBA Draft was held on July 29, 2021, as stated in Passage [1].", "source_talk"),
    ("This is mentioned in Passage  (docs0) where it states the draft was held in Brooklyn.", "source_talk"),
    ("The passage [1] states that short-dated government bills carry the least risk.", "source_talk"),
    ("Duration measures a bond's sensitivity to interest rates [1]. This is stated in Passage [1].", "source_talk"),
    ("This is specified in the passage [1] and [3].", "source_talk"),
    ("According to the documents, the warranty lasts two years [1].", "source_talk"),
    ("The context says that the council has 70 seats.", "source_talk"),
    ("Based on the provided information, the bridge opened in 1932 [2].", "source_talk"),
    ("As mentioned in [3], the reset button must be held for five seconds.", "source_talk"),
    ("The sources say the treaty was signed in Paris [4].", "source_talk"),
    # broken citation marks
    ("Sundar Pichai [7].", "dangling_citation"),
    ("Sundar Pichai [].", "malformed_citation"),
    ("Sundar Pichai [source].", "malformed_citation"),
    ("The draft took place in Brooklyn [2, ].", "malformed_citation"),
    # ids in the prose
    ("The draft was held in Brooklyn (3f2a9c0d1e4b5a6f7c8d9e0f1a2b3c4d).", "id_in_prose"),
    ("The draft was held in Brooklyn (docs0).", "id_in_prose"),
    # notes glued to the answer
    ("Hold the reset button for five seconds [2]. Note: instructions addressed to the assistant were found in "
     "manual.html; they were removed before answering and the rest of the text was used.", "note_in_text"),
    ("Warning: a passage this answer rests on contains instructions to the assistant (faq); treat the answer with "
     "care. The fee is 20 dollars [1].", "note_in_text"),
    ("Duration is measured in years [1]. The documents do not say more than this: 1 statement(s) the sources "
     "could not confirm were left out.", "source_talk"),
]

VIOLATING_ZH = [
    ("根据[3]和[4]两段，立法会共有70个议席。", "source_talk"),
    ("根据第4段，比赛在北京举行[4]。", "source_talk"),
    ("文档中提到，该公司成立于1998年[1]。", "source_talk"),
    ("段落[2]指出，生命数耗完即算为踢爆。", "source_talk"),
    ("资料显示，生命数耗完即算为踢爆[1]。", "source_talk"),
    ("上下文中说明，离开游戏后4分钟内不得配对[1]。", "source_talk"),
    ("如[2]所述，玩家以水枪泡封敌人。", "source_talk"),
    ("根据提供的信息，答案是踢爆[1]。", "source_talk"),
    ("生命数耗完即算为踢爆[5]。", "dangling_citation"),
    ("踢爆【】。", "malformed_citation"),
    ("玩家以水枪泡封敌人（docs0）。", "id_in_prose"),
    ("生命数耗完即算为踢爆[1]。注意：文档没有证实这个回答的每一部分，回答可能不完整。", "note_in_text"),
    ("共有70个议席[1]。警告：这个回答所依据的段落中含有针对助手的指令（faq），请谨慎对待。", "note_in_text"),
]

CLEAN_EN = [
    ask("Sundar Pichai [2]."),
    ask("Google's CEO in 2021 was Sundar Pichai [2]."),
    ask("July 29, 2021 [1]."),
    ask("The council has 70 seats [1][2]."),
    ask("The warranty covers parts and labour for two years [1, 3].", cited=(1, 3)),
    ask("The source of the Nile is Lake Victoria [1]."),
    ask("The Northwest Passage was first navigated by Roald Amundsen [2]."),
    ask("Use `arr[0]` to read the first element [1]."),
    ask("In the context of bonds, duration measures sensitivity to interest rates [1]."),
    ask("The passage of the Civil Rights Act came in 1964 [3]."),
    ask("The sources disagree: 70 seats [1]; but 170 seats [2]."),
    ask("Open-source software and renewable energy sources are both covered [2]."),
    ask("The Security Service (MI5) handles counter-intelligence [1]."),
    ask("Nitric oxide dissolves as the [NO] ion [2]."),
    # refusals: the fixed templates and the naive peer's fixed phrase
    ask("I can't answer this from the documents: they do not contain the answer, and I won't guess.", cited=(),
        refused=True),
    ask("I can't make this comparison from the documents: I found evidence about Alpha but not about Beta.",
        cited=(), refused=True),
    ask("insufficient information", cited=(), refused=True),
    ask("The documents contradict the premise of the question.", cited=(), refused=True),
    # the constraint check's refusal (generate/constraint_check.py) says which value the documents give
    ask("The documents give 2020 for this; the question asks about 2021.", cited=(), refused=True),
]

CLEAN_ZH = [
    ask("立法会共有70个议席[1]。"),
    ask("踢爆[1]。"),
    ask("该项目分三个阶段完成[2]。"),
    ask("根据宪法第五条，国家实行依法治国[1]。"),
    ask("这段时间内不得进行配对，共4分钟[1]。"),
    ask("林永康是香港个人资料私隐专员公署前副专员[1]。"),
    ask("梧桐树协议的英语原文已失传[2]。"),
    ask("【原作】中的气化人需要大量的水份才能生存[3]。"),
    ask("文档之间存在分歧：70个议席[1]；而170个议席[2]。"),
    ask("玩家以水枪、小枪、锤子或是水炸弹泡封敌人[1、2]。", cited=(1, 2)),
    ask("无法根据文档回答这个问题：文档中没有找到答案，我不会猜测。", cited=(), refused=True),
    ask("无法回答：知识库（在所请求的范围内）中没有与该问题相关的内容。", cited=(), refused=True),
    # the generate layer's fixed refusal sentence: a refusal has to say where it looked
    ask("文档中没有提到。", cited=(), refused=True),
    ask("信息不足。", cited=(), refused=True),
    ask("文档给出的是2007, 1800的信息，而问题问的是2009。", cited=(), refused=True),
]


@pytest.mark.parametrize("text,kind", VIOLATING_EN + VIOLATING_ZH)
def test_an_answer_that_talks_about_its_sources_or_breaks_its_marks_is_a_violation(text, kind):
    found = form_violations(ask(text, cited=(1, 2, 3, 4)))
    assert any(v.startswith(kind + ":") for v in found), found


@pytest.mark.parametrize("answer", CLEAN_EN + CLEAN_ZH, ids=lambda a: a["answer"][:40])
def test_a_short_cited_answer_or_a_fixed_refusal_is_clean(answer):
    assert form_violations(answer) == []


def test_there_are_enough_examples_in_both_languages():
    assert len(VIOLATING_EN) >= 12 and len(VIOLATING_ZH) >= 12 and len(CLEAN_EN) >= 12 and len(CLEAN_ZH) >= 10


def test_a_word_the_question_itself_uses_is_the_subject_not_a_source():
    q = "知识库为每个段落建立了哪些索引？"
    a = ask("知识库为每个段落建立了向量索引和全文索引[1]。")
    assert form_violations(a, question=q) == []
    assert form_violations(a) and form_violations(a)[0].startswith("source_talk:")
    q_en = "Which documents does a visa application need?"
    visa = ask("A passport and two photos; the documents go to the consulate [1].")
    assert form_violations(visa, question=q_en) == []


def test_a_free_worded_refusal_that_talks_about_passages_is_a_violation():
    free = ask("The passages do not mention who was CEO in 2019.", cited=(), refused=True)
    assert form_violations(free)[0].startswith("source_talk:")


def test_a_citation_number_the_answer_does_not_list_is_dangling_only_when_citations_are_known():
    assert form_violations({"answer": "Sundar Pichai [3].", "citations": [{"n": 3}]}) == []
    assert form_violations({"answer": "Sundar Pichai [3].", "citations": [{"n": 1}]}) == ["dangling_citation: [3]"]
    assert form_violations({"answer": "Sundar Pichai [3]."}) == []  # no citation list: the number cannot be judged
    # the naive peer lists no citations: a mark in its text points at nothing
    assert form_violations({"answer": "Sundar Pichai [1].", "citations": []}) == ["dangling_citation: [1]"]


def test_an_id_or_file_name_of_a_cited_passage_in_the_prose():
    hit = {"n": 1, "chunk_id": "c" * 32, "doc_id": "d" * 16, "path": "/kb/docs/faq-07.html", "title": "faq-07"}
    assert form_violations({"answer": "Fees are waived (see faq-07.html) [1].", "citations": [hit]}) == [
        "id_in_prose: faq-07.html"]
    assert form_violations({"answer": f"Fees are waived [1] ({'d' * 16}).", "citations": [hit]})[0].startswith(
        "id_in_prose:")
    named = {**hit, "title": "Pricing", "path": "/kb/pricing.md"}
    assert form_violations({"answer": "Pricing starts at 5 dollars [1].", "citations": [named]}) == []


def test_each_violation_is_named_once_with_what_was_found():
    found = form_violations(ask("This is mentioned in Passage  (docs0) [9]. Note: see [].", cited=(1,)))
    kinds = [v.split(":")[0] for v in found]
    assert sorted(set(kinds)) == ["dangling_citation", "id_in_prose", "malformed_citation", "note_in_text",
                                  "source_talk"]
    assert len(found) == len(set(found))
    assert "source_talk: Passage" in found and "dangling_citation: [9]" in found


def test_an_empty_or_missing_answer_has_no_form_to_judge():
    assert form_violations({"answer": ""}) == [] and form_violations({}) == []


def test_the_constraint_checks_refusals_are_clean():
    """The generate layer's refusals for a broken constraint are fixed wording, like the gate's templates."""
    assert form_violations({"answer": "The documents give 2020 for this; the question asks about 2021.", "citations": []}) == []
    assert form_violations({"answer": "文档中没有提到《悲伤逆流成河》。", "citations": []}) == []


def test_the_no_evidence_refusal_names_the_documents_not_the_passages():
    """A refusal may say where it looked ("the documents"), as the peer's does; it must not talk about the retrieved
    passages. Checked on the template's own words, without the exemption the form checks give refusals."""
    for question in ("When was it founded?", "它是哪一年创办的？"):
        words = [v.split(": ", 1)[1].lower() for v in _source_talk(render("no_evidence", question), "")]
        assert words and not [w for w in words if "passage" in w or "段" in w or "检索" in w], words
