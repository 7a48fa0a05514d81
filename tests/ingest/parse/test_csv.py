"""CSV and TSV files: one document, the file one table (kept as cells and searchable as a pipe table), any
delimiter and encoding, and an empty file reported rather than failing."""

from __future__ import annotations

from pathlib import Path

from helpers import build_kb
from ragclinic.ingest.parse import parser_for, supported_suffixes

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


def test_a_table_wider_than_max_table_columns_fails_the_file_naming_the_setting(tmp_path):
    """A 3,000-column CSV took 33 s and then a 500 (SQLite stores at most 2,000 columns; issue 32)."""
    import time

    import pytest

    from ragclinic.config import Settings
    from ragclinic.errors import ParseError

    from .helpers import parse_all

    path = tmp_path / "wide.csv"
    path.write_text("\n".join(",".join(f"r{r}c{c}" for c in range(3000)) for r in range(3)) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(ParseError) as e:
        parse_all(path)
    assert time.perf_counter() - t0 < 5  # refused before the table is rendered, counted or chunked
    assert "3000 columns" in e.value.reason and "max_table_columns=1000" in e.value.reason
    assert "RAGCLINIC_MAX_TABLE_COLUMNS" in e.value.reason
    with pytest.raises(ParseError, match="at most 2000"):  # the setting cannot go past what SQLite stores
        parse_all(path, Settings(max_table_columns=2000))


def test_a_table_over_max_table_cells_fails_the_file(tmp_path):
    import pytest

    from ragclinic.config import Settings
    from ragclinic.errors import ParseError

    from .helpers import parse_all

    path = tmp_path / "long.csv"
    path.write_text("\n".join(",".join(f"r{r}c{c}" for c in range(10)) for r in range(30)) + "\n")
    with pytest.raises(ParseError, match=r"300 cells.*max_table_cells=100.*RAGCLINIC_MAX_TABLE_CELLS"):
        parse_all(path, Settings(max_table_cells=100))
    assert len(parse_all(path, Settings(max_table_cells=300))) == 1


def test_a_wide_table_in_another_format_is_refused_too(tmp_path):
    import pytest

    from ragclinic.config import Settings
    from ragclinic.errors import ParseError

    from .helpers import parse_all

    path = tmp_path / "wide.md"
    head = "| " + " | ".join(f"h{c}" for c in range(60)) + " |"
    path.write_text(f"# Wide\n\n{head}\n|" + "---|" * 60 + "\n" + head.replace("h", "v") + "\n")
    with pytest.raises(ParseError, match=r"60 columns.*max_table_columns=50"):
        parse_all(path, Settings(max_table_columns=50))
