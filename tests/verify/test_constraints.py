"""Question constraints (years, ordinals, numbers, quoted titles) in English and Chinese, and their check
against a passage: found, missing, or contradicted by another value of the same kind."""

from __future__ import annotations

import pytest

from ragclinic.verify.constraints import (Constraint, answer_type, check, check_all, cn_number, constraints,
                                          has_answer_of_type)


@pytest.mark.parametrize("text, n", [("六", 6), ("十", 10), ("十二", 12), ("二十", 20), ("二十三", 23),
                                     ("一百零五", 105), ("两千零二十", 2020), ("12", 12), ("甲", None)])
def test_chinese_numerals(text, n):
    assert cn_number(text) == n


def test_constraints_of_english_and_chinese_questions():
    assert constraints("Who won the 2022 championship?") == (Constraint("year", "2022", "2022"),)
    kinds = {(c.kind, c.value) for c in constraints("香港第六届立法会选举有多少个议席？")}
    assert kinds == {("ordinal", "6届")}
    got = {(c.kind, c.value) for c in constraints("《小时代》的作者在2013年拍了第几部电影？")}
    assert ("quoted", "小时代") in got and ("year", "2013") in got
    got = {(c.kind, c.value) for c in constraints('Who directed "Dune" in its 3rd adaptation with 70 actors?')}
    assert got == {("quoted", "dune"), ("ordinal", "3"), ("number", "70")}
    assert {(c.kind, c.value) for c in constraints("Who was the first woman in space?")} == {("ordinal", "1")}
    assert constraints("What is the risk-free rate?") == ()


def test_a_passage_about_another_year_contradicts_the_year_asked():
    [c] = check_all("Who won the 2022 championship?", "The 2021 championship was won by Alpha.")
    assert c.verdict == "contradicted" and c.others == ("2021",)
    assert c.describe() == "the passage is about 2021; the question asks about 2022"
    [c] = check_all("Who won the 2022 championship?", "Beta won the championship in 2022.")
    assert c.verdict == "found"
    [c] = check_all("Who won the 2022 championship?", "Beta won the championship.")
    assert c.verdict == "missing"


def test_chinese_ordinals_match_whatever_numerals_the_passage_uses():
    q = "香港第六届立法会选举有多少个议席？"
    assert check_all(q, "第6届立法会共有70个议席。")[0].verdict == "found"
    bad = check_all(q, "第七届立法会由90名议员组成。")[0]
    assert bad.verdict == "contradicted" and bad.others == ("7届",)
    assert check_all(q, "立法会选举90个议席个个有竞争。")[0].verdict == "missing"
    # another unit is not the same kind of ordinal
    assert check_all(q, "第三次会议在周一举行。")[0].verdict == "missing"


def test_quoted_titles_and_plain_numbers_are_found_or_missing():
    c = Constraint("quoted", "dune", '"Dune"')
    assert check(c, "Villeneuve's Dune opened in 2021.").verdict == "found"
    assert check(c, "The film opened in 2021.").verdict == "missing"
    n = Constraint("number", "70", "70")
    assert check(n, "It has 70 seats.").verdict == "found" and check(n, "It has 170 seats.").verdict == "missing"


@pytest.mark.parametrize("q, kind", [
    ("When did the war end?", "date"), ("What year was it founded?", "date"), ("它是哪一年成立的？", "date"),
    ("2019年军运会在什么时候举办？", "date"), ("How many seats are there?", "number"),
    ("香港第六届立法会选举有多少个议席？", "number"), ("他有几个孩子？", "number"),
    ("Who won the 2022 championship?", None), ("2020赛季中超冠军是谁？", None), ("Where is it held?", None),
])
def test_answer_types(q, kind):
    assert answer_type(q) == kind


def test_a_passage_without_a_number_cannot_say_how_many():
    assert has_answer_of_type("number", "共有七十个议席。") and has_answer_of_type("number", "It has 70 seats.")
    assert not has_answer_of_type("number", "The council meets in the chamber.")
    assert has_answer_of_type("date", "It ended on 2 May.") and has_answer_of_type("date", "会议于9月4日举行。")
    assert not has_answer_of_type("date", "The war ended after long talks.")
