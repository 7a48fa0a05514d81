"""The failed-answer library of a knowledge base as a question set (``cases:KB``, issue 56): every case with an
expected answer becomes an item asked against that knowledge base (``eval rag --dataset cases: --kb KB``), so a fix
is checked against every past failure. A case without an expected answer is reported as skipped, with the command
that gives it one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

from ragclinic.eval.datasets.base import LOADERS, Collector, DatasetError, Loaded, QAItem, finish
from ragclinic.store import cases as records

DB_FILE = "kb.sqlite3"


@LOADERS.register("cases")
def load_cases(path: Path) -> Loaded:
    db_path = Path(path) / DB_FILE
    if not db_path.is_file():
        raise DatasetError(f"cases:{path}: no knowledge base there (no {DB_FILE}); give the folder of the knowledge "
                           "base whose failed answers to read, e.g. --dataset cases:.ragclinic")
    conn = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'cases'").fetchone()
        rows = records.listed(SimpleNamespace(conn=conn), limit=1_000_000) if has else []
    finally:
        conn.close()
    if not rows:
        raise DatasetError(f"cases:{path}: the failed-answer library is empty (answers rated -1 become cases: "
                           "`ragclinic feedback TRACE --rating -1`)")
    col, items = Collector(db_path), []
    for c in reversed(rows):  # oldest first: the order they were filed
        if c["expect_refusal"]:
            items.append(QAItem(f"case-{c['id']}", c["question"], (), expect_refusal=True))
        elif c["expected"]:
            items.append(QAItem(f"case-{c['id']}", c["question"], (tuple(c["expected"]),)))
        else:
            col.bad(c["id"], "expected", f"case {c['id']} has no expected answer: `ragclinic cases expect {c['id']} "
                                         "TEXT` (or --refusal) gives it one")
    return finish("qa", items, col)
