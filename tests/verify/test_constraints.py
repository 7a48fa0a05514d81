"""Question constraints (years, ordinals, numbers, quoted titles) in English and Chinese, and their check
against a passage: found, missing, or contradicted by another value of the same kind."""

from __future__ import annotations

import pytest

from ragclinic.verify.constraints import Constraint, check, check_all, cn_number, constraints


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
