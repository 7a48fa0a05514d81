"""Metrics against hand-computed values."""

from __future__ import annotations

import pytest

from ragclinic.eval.metrics import bootstrap_delta, classification, expected_calibration_error
from ragclinic.text.answers import answer_correct, normalise


def test_normalise_case_punctuation_width_and_numbers():
    assert normalise("Treasury Bills!") == "treasurybills"
    assert normalise("ＡＢＣ１２３，。") == "abc123"  # full-width → half-width, Chinese punctuation gone
    assert normalise("1,000,000 people") == "1000000people"
    assert normalise("3.50%") == "35"  # 3.50 → 3.5, then the point and % go
    assert normalise("70个议席") == "70个议席"


def test_answer_parts_and_alternatives():
    assert answer_correct("第六届立法会共有70个议席。", (("70",),))
    assert not answer_correct("共有170个议席", (("七十",),))
    both = (("1月3日", "一月三日"), ("1月12日",))
    assert answer_correct("宣誓在一月三日，选举在1月12日。", both)
    assert not answer_correct("宣誓在1月3日。", both)  # one required part missing
    assert answer_correct("They use Treasury bills.", (("treasury bills", "T-bills"),))
    assert not answer_correct("anything", ())
    assert not answer_correct("共有170个议席。", (("70",),))  # a number inside a longer one is not the answer
    assert answer_correct("70 seats, not 170.", (("70",),)) and answer_correct("It had 1,200 staff", (("1200",),))
    assert answer_correct("选举在2016年9月4日举行", (("9月4日",),)) and not answer_correct("在19月4日", (("9月4日",),))
    assert answer_correct("It was 3.50 dollars", (("3.5",),)) and not answer_correct("35 dollars", (("3.5",),))
    # separators the expected answer lacks still match; a decimal is not its integer part
    for resp, ans in (("2016 年 9 月 4 日", "9月4日"), ("共 1361 万人", "1361万"), ("70 个议席", "70个"),
                      ("COVID-19", "COVID19"), ("B-52", "B52"), ("1.5 million", "1.5million"), ("1 200 staff", "1200")):
        assert answer_correct(resp, ((ans,),)), (resp, ans)
    assert not answer_correct("70.5 seats", (("70",),)) and not answer_correct("0.5 percent", (("5",),))


def test_classification_by_hand():
    pred = [True, True, False, False, True]
    gold = [True, False, True, False, True]
    m = classification(pred, gold)
    # tp 2, fp 1, fn 1, tn 1
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (2, 1, 1, 1)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    with pytest.raises(ValueError):
        classification([True], [True, False])


def test_expected_calibration_error_by_hand():
    # bin 0.9x: confidences 0.9, 0.9 with 1 correct → |0.9 − 0.5| = 0.4, weight 2/4
    # bin 0.1x: confidences 0.1, 0.1 with 0 correct → |0.1 − 0| = 0.1, weight 2/4
    assert expected_calibration_error([0.9, 0.9, 0.1, 0.1], [True, False, False, False]) == pytest.approx(0.25)
    assert expected_calibration_error([1.0], [True]) == pytest.approx(0.0)
    assert expected_calibration_error([], []) == 0.0


def test_bootstrap_delta():
    a = [0, 0, 1, 1, 0, 1, 0, 1]
    b = [1, 0, 1, 1, 1, 1, 0, 1]
    mean, lo, hi = bootstrap_delta(a, b, rounds=500, seed=1)
    assert mean == pytest.approx(0.25)
    assert 0.0 <= lo <= mean <= hi <= 0.625
    same = bootstrap_delta(a, a, rounds=100)
    assert same == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        bootstrap_delta([], [])


def test_an_alternative_that_normalising_reduces_to_a_letter_must_appear_as_written():
    """"+t" (the sticky bit), "%p" (archive_command's path), "-j": normalised to "t", "p", "j" they were found in
    almost any answer; a real-manual question set marked "设置 Set-Group-ID 位" correct for the sticky bit."""
    sticky = (("粘滞位", "sticky", "+t"),)
    assert not answer_correct("设置“Set-Group-ID”位，所有在目录里面创建的文件将属于目录所属的组", sticky)
    assert answer_correct("用 chmod +t 给目录设置", sticky) and answer_correct("给目录设置粘滞位", sticky)
    assert answer_correct("archive_command = 'cp %P /mnt/server/archivedir/%F'", (("%p",), ("%f",)))
    assert not answer_correct("a copy of the file to the archive", (("%p", "%f"),))
    assert answer_correct("第六届立法会共有70个议席。", (("70",),))  # digits and words as before


def test_ordinary_alternatives_with_marks_match_as_before():
    """The as-written rule is for flags and placeholders only: numbers, abbreviations and units keep the
    normalised match and the number boundary."""
    assert answer_correct("about 1.5 per cent", (("1.50",),)) and answer_correct("version 3", (("3.0",),))
    assert answer_correct("5 % of them", (("5%",),)) and answer_correct("the US", (("U.S.",),))
    assert answer_correct("AI", (("A.I.",),)) and answer_correct("共6个", (("6 个",),))
    assert not answer_correct("15%", (("5%",),)) and not answer_correct("-10", (("-1",),))


def test_short_names_and_abbreviations_are_words_not_letters():
    assert not answer_correct("Choose Java", (("C#",),)) and answer_correct("use C# here", (("C#",),))
    assert not answer_correct("Its a cat", (("A+",),)) and answer_correct("grade A+", (("A+",),))
    assert not answer_correct("Because of France", (("U.S.",),)) and answer_correct("the U.S. economy", (("U.S.",),))
    assert answer_correct("chmod o+t dir", (("+t",),)) and not answer_correct("+trace", (("+t",),))
