"""Tables found at ingest are SQL tables (typed columns, dropped and replaced with their document), and the sql
tool runs exactly one read-only SELECT over the tables it is allowed, within row and time limits."""

from __future__ import annotations

import pytest

from helpers import build_kb
from ragclinic.store.tables import list_tables
from ragclinic.tools.calculator import ToolError
from ragclinic.tools.sql import run_sql

PRODUCTS = ("product,price,units_q1,units_q2\nKettle,25.50,120,340\nToaster,40,90,75\n"
            "\"Mixer, deluxe\",\"1,200\",10,12\n")
MD = "# Sales\n\n| 区域 | 销量 |\n|---|---|\n| 华东 | 3,120 |\n| 华南 | 2,905 |\n"


@pytest.fixture
def kb(tmp_path):
    base = build_kb(tmp_path, {"products.csv": PRODUCTS, "sales.md": MD, "note.txt": "no table here"})
    yield base
    base.close()


def _tables(kb):
    return {t["title"]: t for t in list_tables(kb.db.conn)}


def test_tables_become_typed_sql_tables(kb):
    found = _tables(kb)
    assert set(found) == {"products", "Sales"}
    p = found["products"]
    assert [(n, ty) for n, ty, _ in p["columns"]] == [("product", "TEXT"), ("price", "REAL"), ("units_q1", "INTEGER"),
                                                        ("units_q2", "INTEGER")]
    assert p["rows"] == 3
    s = found["Sales"]
    assert [(n, ty) for n, ty, _ in s["columns"]] == [("区域", "TEXT"), ("销量", "INTEGER")]


def test_the_revenue_questions(kb):
    name = _tables(kb)["products"]["name"]
    allowed = {t["name"] for t in list_tables(kb.db.conn)}
    top = run_sql(kb.db.path, f"SELECT product, price * units_q2 AS revenue FROM {name} ORDER BY revenue DESC LIMIT 1",
                  allowed)
    assert top.rows == (("Mixer, deluxe", 14400.0),) and top.columns == ("product", "revenue") and top.tables == (name,)
    total = run_sql(kb.db.path, f"SELECT SUM(price * units_q2) FROM {name}", allowed)
    assert total.rows[0][0] == pytest.approx(25.5 * 340 + 40 * 75 + 1200 * 12)
    sales = _tables(kb)["Sales"]["name"]
    assert run_sql(kb.db.path, f'SELECT SUM("销量") FROM {sales}', allowed).rows == ((6025,),)


@pytest.mark.parametrize("query, why", [
    ("DROP TABLE {t}", "only SELECT"),
    ("DELETE FROM {t}", "only SELECT"),
    ("SELECT * FROM {t}; DELETE FROM {t}", "exactly one statement"),
    ("PRAGMA table_info({t})", "only SELECT"),
    ("ATTACH DATABASE 'x.db' AS x", "only SELECT"),
    ("SELECT * FROM documents", "no table documents"),
    ("SELECT * FROM sql_tables", "no table sql_tables"),
    ("SELECT 1 + 1", "reads no table"),
    ("SELEC * FROM {t}", "cannot parse|only SELECT"),
    ("WITH x AS (SELECT * FROM traces) SELECT * FROM x", "no table traces"),
    ("SELECT * FROM {t}, pragma_table_info('documents')", "table-valued function"),
    ("SELECT * FROM {t} JOIN json_each('[1]')", "table-valued function"),
    ("SELECT load_extension('x') FROM {t}", "load_extension"),
    ("SELECT readfile('/etc/passwd') FROM {t}", "readfile"),
    ("SELECT * FROM {t} UNION SELECT * FROM documents", "no table documents"),
    ("SELECT (SELECT text FROM main.documents) FROM {t}", "no table documents"),
])
def test_only_one_reading_select_over_allowed_tables(kb, query, why):
    name = _tables(kb)["products"]["name"]
    with pytest.raises(ToolError, match=why):
        run_sql(kb.db.path, query.format(t=name), {name})


def test_sqlite_itself_refuses_what_the_parse_check_misses(kb):
    name = _tables(kb)["products"]["name"]
    sneaky = f"SELECT text FROM chunks, {name} WHERE EXISTS (WITH chunks AS (SELECT 1) SELECT 1 FROM chunks)"
    with pytest.raises(ToolError, match="may not be the name of a stored table"):
        run_sql(kb.db.path, sneaky, {name})
    with pytest.raises(ToolError, match="beyond the tables|no table"):
        run_sql(kb.db.path, f"SELECT * FROM {name} WHERE product IN documents", {name})
    with pytest.raises(ToolError, match="cannot parse"):
        run_sql(kb.db.path, "SELECT 'abc", {name})


def test_a_table_outside_the_scope_is_not_there(kb):
    products, sales = _tables(kb)["products"]["name"], _tables(kb)["Sales"]["name"]
    with pytest.raises(ToolError, match=f"no table {sales}"):
        run_sql(kb.db.path, f"SELECT * FROM {sales}", {products})


def test_row_and_time_limits(kb):
    name = _tables(kb)["products"]["name"]
    r = run_sql(kb.db.path, f"SELECT * FROM {name} a, {name} b", {name}, max_rows=4)
    assert len(r.rows) == 4 and r.truncated
    slow = (f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
            f"SELECT COUNT(*) FROM n, {name}")
    with pytest.raises(ToolError, match="ran past"):
        run_sql(kb.db.path, slow, {name}, max_seconds=0.2)


def test_tables_follow_their_document(tmp_path):
    kb = build_kb(tmp_path, {"products.csv": PRODUCTS})
    try:
        [first] = list_tables(kb.db.conn)
        with kb.db.transaction():
            kb.db.delete_documents([first["doc_id"]])
        assert list_tables(kb.db.conn) == []
        assert kb.db.conn.execute("SELECT name FROM sqlite_master WHERE name = ?", [first["name"]]).fetchone() is None
    finally:
        kb.close()


def test_long_ids_stay_exact_and_empty_tables_are_skipped(tmp_path):
    ids = "person,id_number,count\nA,110101199003071234,3\nB,99999999999999999999,4\n"
    kb = build_kb(tmp_path, {"ids.csv": ids, "blank.md": "# Blank\n\n| |\n|---|\n| |\n"})
    try:
        [t] = [x for x in list_tables(kb.db.conn) if x["title"] == "ids"]
        types = {n: ty for n, ty, _ in t["columns"]}
        assert types == {"person": "TEXT", "id_number": "TEXT", "count": "INTEGER"}  # 2**64 < 99999999999999999999
        r = run_sql(kb.db.path, f"SELECT id_number FROM {t['name']} WHERE person = 'A'", {t["name"]})
        assert r.rows == (("110101199003071234",),)
    finally:
        kb.close()
