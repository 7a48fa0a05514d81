from __future__ import annotations

import zipfile

import pytest

from ragclinic.config import Settings
from ragclinic.demo.writers import write_docx
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import markdown_table

from .helpers import assert_spans_valid, parse_all, parse_one

TABLE = [["Setting", "Default"], ["chunk_max_tokens", "320"], ["embedder", "e5"]]


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    path = tmp_path_factory.mktemp("docx") / "design.docx"
    write_docx(path, "Design Notes", [
        ("Intro", 1, ["The intro explains why retrieval needs structure.", TABLE, "Text after the table."]),
        ("Details", 2, ["Details about chunk sizes and overlap."]),
        ("Outro", 1, ["Closing words."]),
    ])
    return parse_one(path)


def test_headings_become_section_paths(parsed):
    doc = parsed.document
    paths = [s.path for s in doc.sections]
    assert ("Intro",) in paths and ("Intro", "Details") in paths and ("Outro",) in paths
    intro = next(s for s in doc.sections if s.path == ("Intro",))
    details = next(s for s in doc.sections if s.path == ("Intro", "Details"))
    outro = next(s for s in doc.sections if s.path == ("Outro",))
    assert intro.start < details.start < details.end == intro.end == outro.start
    assert doc.title == "Design Notes"
    assert_spans_valid(doc)


def test_table_in_body_order(parsed):
    doc = parsed.document
    (table,) = doc.tables
    assert table.rows == tuple(tuple(r) for r in TABLE)
    assert doc.text[table.start:table.end] == markdown_table(TABLE)
    assert doc.text.index("why retrieval") < table.start < doc.text.index("Text after the table")
    assert parsed.report.keyword_retention == 1.0 and doc.pages == ()


def _bomb(path, size: int) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as member:
            block = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                member.write(block)


def test_zip_bomb_by_ratio(tmp_path):
    path = tmp_path / "bomb.docx"
    _bomb(path, 40 << 20)  # 40 MB of zeros compress about 1000:1
    with pytest.raises(ParseError, match="zip bomb.*compression ratio.*zip_max_ratio"):
        parse_all(path)


def test_zip_bomb_by_size(tmp_path):
    path = tmp_path / "bomb.docx"
    _bomb(path, 8 << 20)
    small = Settings(zip_max_uncompressed=4 << 20, zip_max_ratio=1e9)
    with pytest.raises(ParseError, match=r"zip bomb: 8 MB uncompressed \(limit 4 MB, settings zip_max_uncompressed\)"):
        parse_all(path, small)


@pytest.mark.parametrize("data", [b"plain text, not a zip", b"PK\x03\x04garbage"])
def test_corrupt_docx(tmp_path, data):
    path = tmp_path / "broken.docx"
    path.write_bytes(data)
    with pytest.raises(ParseError, match="corrupt DOCX"):
        parse_all(path)


def test_zip_without_document_xml(tmp_path):
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(ParseError, match="no word/document.xml"):
        parse_all(path)


def test_content_controls_nested_tables_and_merged_cells(tmp_path):
    import copy

    import docx
    from docx.oxml.ns import qn
    from lxml import etree

    d = docx.Document()
    d.add_heading("Intro", 1)
    table = d.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "MERGED"
    table.cell(1, 0).text = "x"
    inner = table.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "NESTEDA", "n1"
    wrapped = d.add_paragraph("Inside a content control.")
    sdt = etree.SubElement(d.element.body, qn("w:sdt"))
    content = etree.SubElement(sdt, qn("w:sdtContent"))
    content.append(copy.deepcopy(wrapped._p))
    d.element.body.remove(wrapped._p)
    d.element.body.remove(sdt)
    d.element.body.insert(len(d.element.body) - 1, sdt)  # before sectPr, as Word writes it
    path = tmp_path / "controls.docx"
    d.save(str(path))
    doc = parse_one(path).document
    assert "| MERGED |  |  |" in doc.text and "NESTEDA n1" in doc.text
    assert doc.text.rstrip().endswith("Inside a content control.")
