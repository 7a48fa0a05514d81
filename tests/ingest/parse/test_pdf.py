from __future__ import annotations

import pytest

from ragclinic.demo.writers import PdfPage, write_pdf
from ragclinic.errors import EncryptedDocument, ParseError
from ragclinic.ingest.parse.base import markdown_table

from .helpers import assert_spans_valid, parse_all, parse_one

COL1 = [
    "Alpha one: dense retrieval maps queries and passages into vectors so that retrieval "
    "becomes a nearest neighbour search over the whole collection.",
    "Alpha two: a risk-free baseline keeps the lexical index because risk-free fallbacks "
    "matter when the embedder fails on rare terms.",
]
COL2 = [
    "Beta one: the second column talks about reranking with cross encoders that read the "
    "query and the passage together.",
    "Beta two: the final paragraph of the second column closes the page with a summary.",
]
TABLE = [["Model", "Recall", "Latency"], ["BM25", "0.61", "3 ms"], ["E5 small", "0.72", "11 ms"]]


@pytest.fixture(scope="module")
def two_column(tmp_path_factory):
    path = tmp_path_factory.mktemp("pdf") / "two-column.pdf"
    write_pdf(path, title="Hybrid Retrieval Notes", hyphenate=["retrie-val", "risk-free"], pages=[
        PdfPage(heading="Hybrid Retrieval Notes", columns=[COL1, COL2], table=TABLE, table_heading="Results"),
        PdfPage(columns=[["Page two has a single column of text about evaluation and reporting."]]),
        PdfPage(),  # blank, like a scanned page without a text layer
    ])
    return parse_one(path)


def test_columns_are_read_one_after_the_other(two_column):
    text = two_column.document.text
    starts = [text.index(s.split(":")[0]) for s in COL1 + COL2]
    assert starts == sorted(starts)  # Alpha one < Alpha two < Beta one < Beta two


def test_hyphen_across_line_break_is_joined_and_compound_kept(two_column):
    text, report = two_column.document.text, two_column.report
    assert "dense retrieval maps" in text and "retrie-" not in text and "retrie val" not in text
    assert text.count("risk-free") == 2 and "riskfree" not in text
    assert report.hyphen_joins == 1 and report.hyphens_kept == 1


def test_table_appears_once_as_markdown_and_as_cells(two_column):
    doc = two_column.document
    (table,) = doc.tables
    assert table.rows == tuple(tuple(r) for r in TABLE) and table.page == 1
    assert doc.text[table.start:table.end] == markdown_table(TABLE)
    assert doc.text.count("E5 small") == 1 and doc.text.count("Latency") == 1
    # The table is where it is on the page: after both columns and its heading, before page 2.
    assert doc.text.index("Beta two") < doc.text.index("Results") < table.start < doc.text.index("Page two")


def test_pages_cover_the_text_and_blank_page_is_reported(two_column):
    doc, report = two_column.document, two_column.report
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert_spans_valid(doc)
    assert doc.page_at(doc.text.index("Beta one")) == 1
    assert doc.page_at(doc.text.index("Page two")) == 2
    assert doc.pages[2].start == doc.pages[2].end == len(doc.text)
    assert report.pages == 3 and report.empty_pages == (3,)
    assert any("page 3: page has no text" in w for w in report.warnings)
    assert "Page 1" not in doc.text and "Page 3" not in doc.text  # page-number footers dropped


def test_document_fields(two_column):
    doc, report = two_column.document, two_column.report
    assert doc.title == "Hybrid Retrieval Notes" and doc.parser == "pdf" and doc.language == "en"
    assert doc.sections[0].path == ("Hybrid Retrieval Notes",)
    assert ("Hybrid Retrieval Notes", "Results") in [s.path for s in doc.sections]
    assert report.tables == 1 and report.keyword_retention == 1.0 and report.lost_keywords == ()


def test_encrypted_pdf_raises_encrypted_document(tmp_path):
    path = write_pdf(tmp_path / "secret.pdf", title="Secret", paragraphs=["hidden"], user_password="pw")
    with pytest.raises(EncryptedDocument, match="encrypted PDF: needs a password"):
        parse_all(path)


@pytest.mark.parametrize("data", [b"%PDF-1.4\nbroken beyond repair\n", b"not a pdf at all", b""])
def test_corrupt_pdf_raises_parse_error(tmp_path, data):
    path = tmp_path / "corrupt.pdf"
    path.write_bytes(data)
    with pytest.raises(ParseError, match="not a valid PDF"):
        parse_all(path)


def test_truncated_pdf_raises_parse_error(tmp_path):
    good = write_pdf(tmp_path / "good.pdf", title="T", paragraphs=["some text"] * 3)
    path = tmp_path / "truncated.pdf"
    path.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    with pytest.raises(ParseError):
        parse_all(path)


def test_chinese_pdf(tmp_path):
    sentence = "检索增强生成系统先把文档切分成段落，再用向量检索找到相关段落。"
    path = write_pdf(tmp_path / "zh.pdf", title="中文文档", paragraphs=[sentence * 3], chinese=True)
    doc = parse_one(path).document
    assert doc.language == "zh" and sentence * 3 in doc.text  # no spaces where lines were wrapped
