from __future__ import annotations

import pytest

from ragclinic.config import Settings
from ragclinic.ingest.parse.quality import (build_report, distinctive_keywords, garbling,
                                              keyword_retention, tokens)
from ragclinic.types import Page, ParsedDocument

RAW = ("A risk-free baseline keeps the lexical index. The risk-free fallback matters when the "
       "embedder fails. Retrieval quality depends on the fallback and the lexical index.")


def test_dropped_hyphen_lowers_retention_and_names_the_keyword():
    broken = RAW.replace("risk-free", "riskfree")
    result = keyword_retention(RAW, broken, top_n=10)
    assert result.retention is not None and result.retention < 1.0
    assert result.lost == ("risk-free",)
    assert keyword_retention(RAW, RAW + " ", top_n=10).retention == 1.0


def test_report_warns_about_lost_keywords():
    broken = RAW.replace("risk-free", "riskfree")
    doc = ParsedDocument(doc_id="d", path="/x/report.pdf", record_key="", title="t", text=broken)
    report = build_report(doc, Settings(keyword_top_n=5), raw_text=RAW)
    assert report.keyword_retention == pytest.approx(0.8) and report.lost_keywords == ("risk-free",)
    assert any("/x/report.pdf: only 80%" in w and "lost: risk-free" in w for w in report.warnings)


def test_keywords_are_frequent_non_stopwords():
    text = "the the the index index index fallback fallback of of to we quality"
    assert distinctive_keywords(text, 3) == ("index", "fallback", "quality")
    assert "the" not in tokens(text) and "we" not in tokens(text)
    assert tokens("see https://example.org/x and 2024 and risk-free") == ["risk-free"]


def test_chinese_keywords_use_jieba_words():
    text = "向量检索系统使用向量检索。向量检索很快。"
    keywords = distinctive_keywords(text, 3)
    assert keywords[0] == "向量" or "检索" in keywords[0]
    assert keyword_retention(text, text.replace("检索", ""), 3).retention < 1.0


@pytest.mark.parametrize("text, replacement, hits", [
    ("clean text", 0, 0),
    ("caf\ufffd au lait \ufffd", 2, 0),
    ("CafÃ© and naÃ¯ve", 0, 2),  # UTF-8 read as cp1252
    ("donâ€™t", 0, 1),
    ("ÖÐÎÄ ÎÄ±¾", 0, 1),  # GBK read as Latin-1 (中文 文本)
    ("锟斤拷锟斤拷", 0, 1),
    ("Café crème brûlée", 0, 0),  # real accents are not mojibake
])
def test_garbling(text, replacement, hits):
    assert garbling(text)[:2] == (replacement, hits)


def test_garbled_ratio_and_warning():
    text = "CafÃ© " * 10
    doc = ParsedDocument(doc_id="d", path="/x/a.txt", record_key="", title="t", text=text.strip())
    report = build_report(doc, Settings(), raw_text=text)
    assert report.mojibake_hits == 10 and report.garbled_ratio == pytest.approx(20 / len(text.strip()))
    assert any("look garbled" in w for w in report.warnings)


def test_empty_pages_and_undefined_ratios():
    doc = ParsedDocument(doc_id="d", path="/x/scan.pdf", record_key="", title="t", text="",
                         pages=(Page(1, 0, 0), Page(2, 0, 0)))
    report = build_report(doc, Settings(), raw_text="")
    assert report.empty_pages == (1, 2) and report.garbled_ratio is None
    assert report.keyword_retention is None and report.lost_keywords == ()
    assert "/x/scan.pdf page 2: page has no text" in report.warnings  # OCR on (the default) read nothing there
    off = build_report(doc, Settings(ocr=""), raw_text="")
    assert "/x/scan.pdf page 2: page has no text (a scan? set ocr to read it)" in off.warnings
