from __future__ import annotations

import pysbd
import pytest

from ragclinic.ingest.chunk.tokens import FakeTokenCounter
from ragclinic.text.sentences import _SEGMENTER, split_clauses, split_sentences


def texts(text: str, **kw) -> list[str]:
    spans = split_sentences(text, **kw)
    # contiguous, covering, exact
    start = kw.get("start", 0)
    if spans:
        assert spans[0][0] == start and spans[-1][1] == start + len(text)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    return [text[a - start:b - start] for a, b in spans]


def test_english_abbreviations_do_not_end_sentences():
    text = "Dr. Smith arrived at 5 p.m. yesterday. He met Prof. Jones, i.e. the chair. It went well."
    assert texts(text) == ["Dr. Smith arrived at 5 p.m. yesterday. ", "He met Prof. Jones, i.e. the chair. ",
                           "It went well."]


def test_trailing_whitespace_belongs_to_the_sentence_before():
    text = "  First one.   Second one?\n\nThird!  \n"
    assert texts(text) == ["  First one.   ", "Second one?\n\n", "Third!  \n"]


def test_offsets_are_shifted_by_start():
    text = "One here. Two there."
    assert split_sentences(text, start=100) == [(100, 110), (110, 120)]
    assert texts(text, start=100) == ["One here. ", "Two there."]


def test_odd_whitespace_keeps_spans_exact():
    text = "Tabs\there.\u00a0Next\u3000one.\r\nA line\nbreak.  \t"
    got = texts(text)
    assert "".join(got) == text
    assert len(got) >= 2


def test_chinese_with_closing_quotes():
    assert texts("他说：“你好。”然后离开了。") == ["他说：“你好。”", "然后离开了。"]
    assert texts("真的吗？！」她问。好……") == ["真的吗？！」", "她问。", "好……"]


def test_chinese_ascii_punctuation_only_after_cjk():
    assert texts("我们走吧!他说;好的。") == ["我们走吧!", "他说;", "好的。"]


def test_chinese_does_not_end_at_a_wrapped_line():
    assert texts("这是一个很长的句子，被\n换行了。下一句。") == ["这是一个很长的句子，被\n换行了。", "下一句。"]


def test_mixed_paragraphs_are_split_in_their_own_language():
    text = "Intro sentence. Another one.\n\n中文句子。第二句！\n\n我们使用BERT模型和很多中文字符. The model is good. 然后。"
    got = texts(text)
    assert got[:4] == ["Intro sentence. ", "Another one.\n\n", "中文句子。", "第二句！\n\n"]
    assert got[-1] == "然后。"
    assert "The model is good. " in got


def test_chinese_sentence_inside_english_paragraph():
    assert texts("This is English. 这是中文。 Back to English.") == [
        "This is English. ", "这是中文。 ", "Back to English."]


def test_language_can_be_forced():
    # As English, the Chinese full stop still cuts, but a wrapped line does too (pysbd's rule).
    assert texts("一二三\n四五六。", language="zh") == ["一二三\n四五六。"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n"])
def test_blank_text_has_no_sentences(blank):
    assert split_sentences(blank) == []


def test_pysbd_quirk_characters_fall_back_to_search():
    # pysbd uses "∯" internally and writes it back as "."; alignment must not lose text.
    text = "Odd ∯ symbol here. Next sentence."
    got = texts(text)
    assert "".join(got) == text


TRICKY = [
    "See Fig. 2 and p. 5. No. 3 was ok. I.e. fine; e.g. this. Is. Man. May. Ok.",
    "Washington D.C. is big. He works for the U.S. government. The U.S. Army is large.",
    "Mr. J. R. R. Tolkien wrote it. St. Louis is in Mo. and so on.",
    "The p. value was small (p < 0.05). Vs. the control, etc. it rose. V. cholerae grew.",
    "ſt. Kelvin K. İs. ıs. test",
    "1. First item 2. Second item. a) one b) two.",
    "He said \"Stop.\" Then left. 'Quoted.' Done!",
]


@pytest.mark.parametrize("text", TRICKY)
def test_fast_abbreviation_pass_matches_stock_pysbd(text):
    stock = pysbd.Segmenter(language="en", clean=False)
    assert _SEGMENTER.processor(text).process() == stock.processor(text).process()


COUNT = FakeTokenCounter().count


def test_clauses_split_at_clause_punctuation_only():
    text = "Costs rose to 1,000 dollars, prices fell; ratios were 3:4 — as seen (here) and there"
    got = [text[a:b] for a, b in split_clauses(text)]
    assert got == ["Costs rose to 1,000 dollars, ", "prices fell; ", "ratios were 3:4 — ", "as seen (here) ",
                   "and there"]


def test_clauses_over_the_limit_split_at_whitespace_then_characters():
    text = "one two three four five six, 中文字符很多很多很多很多很多，end"
    spans = split_clauses(text, 10, max_tokens=4, count=COUNT)
    pieces = [text[a - 10:b - 10] for a, b in spans]
    assert "".join(pieces) == text
    assert all(COUNT(p) <= 4 for p in pieces)
    assert pieces[:2] == ["one ", "two "]
    assert "中文字符" in pieces


def test_clauses_that_fit_stay_whole():
    text = "short clause, and another"
    assert [text[a:b] for a, b in split_clauses(text, 0, 10, COUNT)] == ["short clause, ", "and another"]


def test_hard_wrapped_english_lines_are_one_sentence_but_list_items_are_not():
    text = ("The quick brown fox jumps over the lazy dog and then\nkeeps running through the field until\n"
            "the river. A second sentence.\n- item one\n- item two")
    got = [text[a:b].strip() for a, b in split_sentences(text)]
    assert got[0].endswith("the river.") and got[0].startswith("The quick")
    assert got[1:] == ["A second sentence.", "- item one", "- item two"]
