"""The failed-answer library's records (issue 56) in the knowledge base's SQLite: one case per trace that a user
rated unhelpful (or, with ``cases_from_doctor``, that the doctor could not repair) — the question, the answer given,
the user's comment, the expected answer when the user gave one, the tenant tags it ran under, the experiment arm it
was answered in, and the debugger's last diagnosis of it."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
  id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL UNIQUE, created REAL NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('rating', 'doctor')), question TEXT NOT NULL, answer TEXT NOT NULL,
  refused INTEGER NOT NULL, comment TEXT NOT NULL, expected TEXT NOT NULL,
  expect_refusal INTEGER NOT NULL DEFAULT 0,  -- the user says the documents do not answer it
  enforced TEXT NOT NULL,
  arm TEXT NOT NULL, diagnosis TEXT, diagnosed REAL
);
"""

_COLS = ("id", "trace_id", "created", "source", "question", "answer", "refused", "comment", "expected",
         "expect_refusal", "enforced", "arm", "diagnosis", "diagnosed")


def upsert(db, case: dict[str, Any]) -> int:
    """File a case for its trace, or add to the one filed already (a later comment is appended, a given expected
    answer or refusal replaces the earlier expectation; a rating turns a doctor's case into a rated one); its id."""
    with db.transaction():
        row = db.conn.execute("SELECT id, comment, expected, expect_refusal FROM cases WHERE trace_id = ?",
                              [case["trace_id"]]).fetchone()
        if row is None:
            cur = db.conn.execute(
                "INSERT INTO cases (trace_id, created, source, question, answer, refused, comment, expected, "
                "expect_refusal, enforced, arm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [case["trace_id"], case["created"], case["source"], case["question"], case["answer"],
                 int(case["refused"]), case["comment"], json.dumps(list(case["expected"]), ensure_ascii=False),
                 int(case["expect_refusal"]), case["enforced"], case["arm"]])
            return int(cur.lastrowid)
        case_id, comment, expected, refusal = row
        comments = [c for c in (comment, case["comment"]) if c]
        given = bool(case["expected"]) or case["expect_refusal"]  # a new expectation replaces the old one
        new_expected, new_refusal = ((list(case["expected"]), case["expect_refusal"]) if given
                                     else (json.loads(expected), bool(refusal)))
        db.conn.execute("UPDATE cases SET comment = ?, expected = ?, expect_refusal = ?, source = CASE WHEN ? = "
                        "'rating' THEN 'rating' ELSE source END WHERE id = ?",
                        ["\n".join(dict.fromkeys(comments)), json.dumps(new_expected, ensure_ascii=False),
                         int(new_refusal), case["source"], case_id])
        return int(case_id)


def set_expected(db, case_id: int, expected: list[str], refusal: bool = False) -> bool:
    with db.transaction():
        cur = db.conn.execute("UPDATE cases SET expected = ?, expect_refusal = ? WHERE id = ?",
                              [json.dumps(expected, ensure_ascii=False), int(refusal), case_id])
    return cur.rowcount > 0


def set_diagnosis(db, case_id: int, diagnosis: dict[str, Any], when: float) -> None:
    with db.transaction():
        db.conn.execute("UPDATE cases SET diagnosis = ?, diagnosed = ? WHERE id = ?",
                        [json.dumps(diagnosis, ensure_ascii=False), when, case_id])


def listed(db, *, enforced: str | None = None, source: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """Newest first; ``enforced``: only the cases asked under exactly these tags (stored form); ``source``: only
    ``rating`` or ``doctor`` cases."""
    where, args = [], []
    if enforced is not None:
        where.append("enforced = ?")
        args.append(enforced)
    if source:
        where.append("source = ?")
        args.append(source)
    sql = f"SELECT {', '.join(_COLS)} FROM cases" + (" WHERE " + " AND ".join(where) if where else "")
    return [_case(r) for r in db.conn.execute(sql + " ORDER BY created DESC, id DESC LIMIT ?", [*args, limit])]


def get(db, case_id: int) -> dict[str, Any] | None:
    row = db.conn.execute(f"SELECT {', '.join(_COLS)} FROM cases WHERE id = ?", [case_id]).fetchone()
    return _case(row) if row else None


def _case(row) -> dict[str, Any]:
    d = dict(zip(_COLS, row))
    d["refused"], d["expect_refusal"] = bool(d["refused"]), bool(d["expect_refusal"])
    d["expected"] = json.loads(d["expected"])
    d["enforced"] = dict(json.loads(d["enforced"]))
    d["diagnosis"] = json.loads(d["diagnosis"]) if d["diagnosis"] else None
    return d
