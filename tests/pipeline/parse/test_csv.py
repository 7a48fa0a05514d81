"""CSV and TSV files: one document, the file one table (kept as cells and searchable as a pipe table), any
delimiter and encoding, and an empty file reported rather than failing."""

from __future__ import annotations

from pathlib import Path

from helpers import build_kb
from ragclinic.pipeline.parse import parser_for, supported_suffixes

from .helpers import assert_spans_valid, parse_one

PRODUCTS = "product,price,units_q1,units_q2\nKettle,25.50,120,340\nToaster,40,90,75\n\"Mixer, deluxe\",120,10,12\n"


def _parse(tmp_path: Path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    parsed = parse_one(path)
    assert_spans_valid(parsed.document)
    return parsed


def test_a_csv_file_is_one_table_kept_as_cells_and_as_text(tmp_path):
    p = _parse(tmp_path, "products.csv", PRODUCTS.encode())
    doc = p.document
    [table] = doc.tables
    assert table.rows[0] == ("product", "price", "units_q1", "units_q2")
    assert table.rows[3] == ("Mixer, deluxe", "120", "10", "12")  # a quoted comma stays in its cell
    assert "| Kettle | 25.50 | 120 | 340 |" in doc.text and doc.text[table.start:table.end].startswith("| product")
    assert p.report.parser == "csv" and doc.title == "products"


def test_delimiters_and_encodings(tmp_path):
    semi = _parse(tmp_path, "a.csv", "名称;价格\n水壶;25\n".encode("gbk"))
    assert semi.document.tables[0].rows == (("名称", "价格"), ("水壶", "25"))
    tsv = _parse(tmp_path, "b.tsv", b"a\tb\n1\t2\n")
    assert tsv.document.tables[0].rows == (("a", "b"), ("1", "2"))
    assert ".csv" in supported_suffixes() and parser_for(Path("x.TSV")).name == "csv"


def test_an_empty_file_is_reported_not_failed(tmp_path):
    p = _parse(tmp_path, "empty.csv", b"\n , \n")
    assert not p.document.tables and any("no cell" in w for w in p.report.warnings)


def test_a_csv_is_searchable_after_ingest(tmp_path):
    kb = build_kb(tmp_path, {"products.csv": PRODUCTS})
    try:
        from ragclinic.pipeline.retrieve import create_retriever

        hits = create_retriever(kb, "lexical").retrieve("Toaster price", 3)
        assert hits and "Toaster" in hits[0].chunk.text
    finally:
        kb.close()
