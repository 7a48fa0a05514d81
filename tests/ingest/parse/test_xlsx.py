"""XLSX workbooks: each sheet a heading and a table, searchable and stored as an SQL table; cached formula
values; empty and corrupt workbooks reported with the fix."""

from __future__ import annotations

import io

import openpyxl
import pytest

from helpers import build_kb
from ragclinic.errors import ParseError
from ragclinic.store.tables import list_tables
from ragclinic.tools.sql import run_sql

from .helpers import assert_spans_valid, parse_one


def _book(sheets: dict[str, list[list]]) -> bytes:
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for r in rows:
            ws.append(r)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


SALES = {"Q1": [["product", "price", "units"], ["Kettle", 25.5, 120], ["Toaster", 40, 90]],
         "Q2": [["product", "price", "units"], ["Kettle", 25.5, 340], ["Toaster", 40, 75]]}


def test_each_sheet_is_a_heading_and_a_table(tmp_path):
    path = tmp_path / "sales.xlsx"
    path.write_bytes(_book(SALES))
    p = parse_one(path)
    assert_spans_valid(p.document)
    assert [s.path for s in p.document.sections] == [("Q1",), ("Q2",)]
    assert [t.rows[1] for t in p.document.tables] == [("Kettle", "25.5", "120"), ("Kettle", "25.5", "340")]
    assert "| Toaster | 40 | 75 |" in p.document.text and p.report.parser == "xlsx"


def test_sheets_are_queryable_after_ingest(tmp_path):
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "sales.xlsx").write_bytes(_book(SALES))
    kb = build_kb(tmp_path, {})
    try:
        from ragclinic.ingest.runner import ingest

        kb.lock()
        assert not ingest(kb, [docs]).failed
        kb.unlock()
        tables = list_tables(kb.db.conn)
        q2 = next(t["name"] for t in tables if t["ordinal"] == 1)
        r = run_sql(kb.db.path, f"SELECT SUM(price * units) FROM {q2}", {t["name"] for t in tables})
        assert r.rows[0][0] == pytest.approx(25.5 * 340 + 40 * 75)
    finally:
        kb.close()


def test_empty_and_corrupt_workbooks(tmp_path):
    empty = tmp_path / "empty.xlsx"
    empty.write_bytes(_book({"Sheet": []}))
    assert any("no cell" in w for w in parse_one(empty).report.warnings)
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ParseError, match="XLSX"):
        parse_one(bad)
