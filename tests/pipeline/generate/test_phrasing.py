"""Answers state the claim, cited at the end — not "According to passage [4], ..." (English and Chinese)."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.citations import answer_sentences
from ragclinic.pipeline.generate.phrasing import rewrite, rewrite_sentence, tidy_citations
from ragclinic.pipeline.runner import Pipeline


@pytest.mark.parametrize("before, after", [
    ("According to passage [4], the bond matures in 2031.", "The bond matures in 2031 [4]."),
    ("According to Passage [4], Alpha won.", "Alpha won [4]."),
    ("The passage [1] states that bills are the usual proxy.", "Bills are the usual proxy [1]."),
    ("Passages [2] and [3] say that rates rose.", "Rates rose [2][3]."),
    ("From passage 2, the answer is 5.", "The answer is 5 [2]."),
    ("根据[3]和[4]两段，2018年新增就业人数为1361万人。", "2018年新增就业人数为1361万人[3][4]。"),
    ("根据第3段，立法会共有90个议席。", "立法会共有90个议席[3]。"),
    ("根据 Passage [1]，2020年GDP为101.6万亿元。", "2020年GDP为101.6万亿元[1]。"),
    ("Based on the passage, Alamgir joined Meesha Shafi.", "Alamgir joined Meesha Shafi."),
    ("我们可以看到，法国是2016年欧洲杯的主办国[2]。", "法国是2016年欧洲杯的主办国[2]。"),
    ("根据[2]，我们可以看到，法国是2016年欧洲杯的主办国。", "法国是2016年欧洲杯的主办国[2]。"),
    ("We can see that the bond matures in 2031 [2].", "The bond matures in 2031 [2]."),
    ("The passage states that Benjamin Halfpenny played for Widnes.", "Benjamin Halfpenny played for Widnes."),
    ("According to the provided documents, the bond matures in 2031.", "The bond matures in 2031."),
    ("根据第1、2、3段落，立法会有90个议席。", "立法会有90个议席[1][2][3]。"),
    ("根据[1]，冠军是山东泰山[1]。", "冠军是山东泰山[1]。"),  # no citation twice
])
def test_source_talk_becomes_a_cited_claim(before, after):
    assert rewrite_sentence(before, {1, 2, 3, 4}) == after


@pytest.mark.parametrize("text", [
    "The bond matures in 2031 [2].", "According to the documents, nothing.", "According to 2020 figures, GDP rose.",
    "根据2020年的数据，GDP增长了。", "According to passage [9], it is 5.",  # [9] was not given: left as written
])
def test_everything_else_is_left_as_written(text):
    assert rewrite_sentence(text, {1, 2, 3, 4}) == text


def test_whole_answers_and_the_generate_layer(tmp_path):
    text, n = rewrite("According to passage [1], X is 3. Y is 4 [2].", answer_sentences, {1, 2})
    assert text == "X is 3 [1]. Y is 4 [2]." and n == 1
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        lm = ScriptedLanguageModel(["According to passage [1], short-dated treasury bills are the usual proxy for "
                                    "the risk-free rate."], yes_prob=0.9)
        state, _ = Pipeline(kb, lm=lm).ask("What is usually used as a proxy for the risk-free rate?")
    finally:
        kb.close()
    a = state.answer
    assert a.text.startswith("Short-dated treasury bills are the usual proxy") and a.text.endswith("[1].")
    assert any(f.startswith("rephrased: 1 sentence") for f in a.flags) and a.claims[0].verdict == "supported"


@pytest.mark.parametrize("before, after", [
    ("知识库为每个段落建立了词法索引和向量索引。 [1]", "知识库为每个段落建立了词法索引和向量索引[1]。"),
    ("Rates rose. [2] Then they fell. [3]", "Rates rose [2]. Then they fell [3]."),
    ("See the table.[1][2]", "See the table [1][2]."), ("A is 5. [1, 2]", "A is 5 [1,2]."),
    ("Rates rose [2].", "Rates rose [2]."), ("It is 3.5 [1].", "It is 3.5 [1]."),
])
def test_a_citation_after_the_full_stop_moves_before_it(before, after):
    assert tidy_citations(before) == after


@pytest.mark.parametrize("text", [
    "The passage [2] mentions Alpha and Beta.", "Passage [1] indicates no change.",  # no "that": not rephrased
    "According to passage 1, 2, 4 and 5 are the winners.", "According to source 1, 2, and 3, X.",
])
def test_ambiguous_source_talk_is_left_alone(text):
    assert rewrite_sentence(text, {1, 2, 3, 4, 5}) == text


@pytest.mark.parametrize("before, after", [
    ("Based on passages [1], [2], and [3], the bond matures in 2031.", "The bond matures in 2031 [1][2][3]."),
    ("According to passage [3], iPhone sales rose.", "iPhone sales rose [3]."),
    ("根据第1和第2段，A是5。", "A是5[1][2]。"), ("According to passage [1], A is 5 [1, 2].", "A is 5 [1, 2]."),
])
def test_lists_case_and_cjk_spacing(before, after):
    assert rewrite_sentence(before, {1, 2, 3}) == after


@pytest.mark.parametrize("text", ["It rose... [1]", "Sources:\n1. [1]\n2. [3]", "U.S. [1]"])
def test_ellipses_numbered_lists_and_abbreviations_keep_their_citations_where_they_are(text):
    assert tidy_citations(text) == text


def test_chinese_sentences_each_get_their_citation_and_quotations_end_sentences():
    from ragclinic.pipeline.generate.citations import attribute_citations
    from ragclinic.types import Chunk, DocInfo, Hit, Passage

    def passage(n, text):
        c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, "zh", 20, 0)
        return Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}.md", f"Doc {n}"), support=0.9)

    ps = [passage(1, "香港第六届立法会共有70个议席。"), passage(2, "选举于2016年9月4日举行。")]
    text, n = attribute_citations("香港第六届立法会共有70个议席。选举于2016年9月4日举行。", ps, 0.5)
    assert text == "香港第六届立法会共有70个议席[1]。选举于2016年9月4日举行[2]。" and n == 2
    assert answer_sentences('He said "we won." The council has 70 seats.') == ['He said "we won."',
                                                                             "The council has 70 seats."]


@pytest.mark.parametrize("filler", ["可以确认这一点[3][4]。", "This is confirmed by the passage [2]."])
def test_an_empty_confirmation_is_not_a_claim(filler):
    from ragclinic.config import Settings
    from ragclinic.pipeline.generate.citations import check_claims

    assert check_claims(filler, [], None, Settings.load(None)) == []
