"""More of the debugger's answer finding (kept aside while it was written): the forms a user types and the forms a
document holds, both ways, in English and Chinese."""

from __future__ import annotations

from ragclinic.text.answers import locate


def _found(answer: str, text: str) -> str | None:
    span = locate(answer, text)
    return None if span is None else text[span[0]:span[1]]


def test_a_comma_typed_in_the_answer_matches_a_date_written_without_one():
    assert _found("September 23, 2013", "launched September 23 2013 at dawn") == "September 23 2013"


def test_a_hyphen_or_a_line_break_inside_a_word_does_not_matter():
    assert _found("cash-flow", "the expected free cashflow of the firm") == "cashflow"
    assert _found("risk-free", "the Risk-\nfree rate") == "Risk-\nfree"


def test_an_amount_is_not_found_inside_a_larger_amount():
    assert locate("200", "a fine of 1,200 euros") is None
    assert locate("1,200", "a fine of 1,200,000 euros") is None
    assert _found("1,200,000", "a fine of 1200000 euros") == "1200000"


def test_a_full_width_date_maps_back_to_the_document_text():
    text = "打开日期：ＳＥＰＴＥＭＢＥＲ　２３，２０１３。"
    assert _found("september 23 2013", text) == "ＳＥＰＴＥＭＢＥＲ　２３，２０１３"


def test_flags_and_abbreviations_must_appear_as_written():
    assert _found("+t", "run chmod +t on the folder") == "+t"
    assert locate("+t", "set the t flag") is None
    assert _found("U.S.", "the US army") == "US"
    assert locate("U.S.", "because of it") is None


def test_chinese_punctuation_and_spaces_do_not_matter():
    assert _found("退款期限：四十五天", "退款期限为收货后四十五天。") is None  # different words stay different
    assert _found("四十五天", "重要提示：退款期限为收货后 四十五 天。") == "四十五 天"
    assert _found("“粘滞位”", "给目录设置粘滞位即可") == "粘滞位"
    assert locate("9月4日", "在19月4日") is None
