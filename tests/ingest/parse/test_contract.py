"""The contract every parser keeps, checked on one generated document per format."""

from __future__ import annotations

import pytest

from ragclinic.demo import writers
from ragclinic.types import Parsed, make_doc_id, sha256_text

from .helpers import assert_spans_valid, parse_all, source_of

ROWS = [["Name", "Value"], ["alpha", "1"], ["beta", "2"]]
SECTIONS = [("Intro", 1, ["Retrieval needs clean text.", ROWS]), ("More", 2, ["Second part text."])]


def _pdf(p):
    return writers.write_pdf(p / "c.pdf", title="Contract", paragraphs=["Retrieval needs clean text."], table=ROWS)


def _docx(p):
    return writers.write_docx(p / "c.docx", "Contract", SECTIONS)


def _html(p):
    return writers.write_html(p / "c.html", "Contract", [("Intro", ["Retrieval needs clean text.", ROWS])])


def _md(p):
    return writers.write_markdown(p / "c.md", "Contract", SECTIONS)


def _txt(p):
    return writers.write_text(p / "c.txt", "Retrieval needs clean text.\nSecond line.")


def _jsonl(p):
    return writers.write_jsonl(p / "c.jsonl", [{"_id": "r1", "title": "Contract", "text": "Retrieval text."}])


@pytest.mark.parametrize("make, parser", [(_pdf, "pdf"), (_docx, "docx"), (_html, "html"), (_md, "markdown"),
                                          (_txt, "text"), (_jsonl, "jsonl")])
def test_parser_contract(tmp_path, make, parser):
    path = make(tmp_path)
    source = source_of(path)
    (result,) = parse_all(path)
    assert isinstance(result, Parsed)
    doc, report = result.document, result.report
    assert_spans_valid(doc)
    assert doc.parser == report.parser == parser
    assert doc.path == str(source.path) and doc.doc_id == make_doc_id(str(source.path), doc.record_key)
    assert doc.sha256 == sha256_text(doc.text) and doc.mtime == source.mtime
    assert doc.metadata["size"] == source.size and doc.metadata["file_sha256"] == source.sha256
    assert doc.title and doc.language == "en" and "Retrieval" in doc.text
    assert (report.doc_id, report.path, report.record_key) == (doc.doc_id, doc.path, doc.record_key)
    assert report.characters == len(doc.text) and report.tables == len(doc.tables)
    assert report.pages == len(doc.pages) and (parser == "pdf") == bool(doc.pages)
    assert report.keyword_retention == 1.0, report
    if parser in ("pdf", "docx", "html", "markdown"):
        assert [t.rows for t in doc.tables] == [tuple(tuple(r) for r in ROWS)]
