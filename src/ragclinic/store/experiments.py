"""Online experiments' records in the knowledge base's SQLite (issue 56): the experiments (their design as JSON)
and one row per answered request of an experiment — its arm, the unit it was assigned by (a session or a key), the
tenant tags it ran under, whether the cache answered, whether it refused, its wall time and model tokens. Ratings
are not copied here: they stay on the trace (``traces.data.feedback``) and the report joins them by ``trace_id``."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
  name TEXT PRIMARY KEY, status TEXT NOT NULL CHECK (status IN ('running', 'stopped')),
  created REAL NOT NULL, stopped REAL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS experiment_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT, experiment TEXT NOT NULL, arm TEXT NOT NULL, unit TEXT NOT NULL,
  created REAL NOT NULL, trace_id TEXT NOT NULL, question TEXT NOT NULL, enforced TEXT NOT NULL,
  cached INTEGER NOT NULL, refused INTEGER NOT NULL, ms REAL NOT NULL, tokens INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS experiment_requests_by ON experiment_requests(experiment, created);
"""

ROW = ("arm", "unit", "created", "trace_id", "question", "enforced", "cached", "refused", "ms", "tokens")


def enforced_json(enforced: dict[str, str] | None) -> str:
    """A request's enforced tags as stored (sorted pairs: one tenant's rows compare equal)."""
    return json.dumps(sorted([k, v] for k, v in (enforced or {}).items()))


def insert(db, name: str, created: float, data: dict[str, Any]) -> None:
    with db.transaction():
        db.conn.execute("INSERT INTO experiments (name, status, created, stopped, data) VALUES (?, 'running', ?, "
                        "NULL, ?)", [name, created, json.dumps(data, ensure_ascii=False)])


def get(db, name: str) -> dict[str, Any] | None:
    row = db.conn.execute("SELECT name, status, created, stopped, data FROM experiments WHERE name = ?",
                          [name]).fetchone()
    return _experiment(row) if row else None


def running(db) -> dict[str, Any] | None:
    row = db.conn.execute("SELECT name, status, created, stopped, data FROM experiments WHERE status = 'running' "
                          "ORDER BY created DESC LIMIT 1").fetchone()
    return _experiment(row) if row else None


def listed(db) -> list[dict[str, Any]]:
    rows = db.conn.execute("SELECT name, status, created, stopped, data FROM experiments ORDER BY created DESC")
    return [_experiment(r) for r in rows]


def stop(db, name: str, when: float) -> bool:
    """Mark it stopped; False when it was not running."""
    with db.transaction():
        cur = db.conn.execute("UPDATE experiments SET status = 'stopped', stopped = ? WHERE name = ? AND "
                              "status = 'running'", [when, name])
    return cur.rowcount > 0


def record(db, name: str, row: dict[str, Any]) -> None:
    with db.transaction():
        db.conn.execute(f"INSERT INTO experiment_requests (experiment, {', '.join(ROW)}) VALUES "
                        f"(?, {', '.join('?' * len(ROW))})", [name, *(row[k] for k in ROW)])


def arm_counts(db, name: str) -> dict[str, int]:
    """Requests recorded per arm."""
    return dict(db.conn.execute("SELECT arm, COUNT(*) FROM experiment_requests WHERE experiment = ? GROUP BY arm",
                                [name]).fetchall())


def requests(db, name: str, enforced: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The experiment's requests, oldest first, each with its trace's ratings (``ratings``: 1 / -1, newest last);
    ``enforced``: only the requests asked under exactly these tags (a tenant's key reads its own)."""
    sql = (f"SELECT {', '.join('r.' + k for k in ROW)}, json_extract(t.data, '$.feedback') FROM experiment_requests r "
           "LEFT JOIN traces t ON t.id = r.trace_id WHERE r.experiment = ?")
    args: list[Any] = [name]
    if enforced is not None:
        sql += " AND r.enforced = ?"
        args.append(enforced_json(enforced))
    out = []
    for r in db.conn.execute(sql + " ORDER BY r.created, r.id", args):
        d = dict(zip(ROW, r[:-1]))
        feedback = json.loads(r[-1]) if r[-1] else []
        d["ratings"] = [int(f["rating"]) for f in feedback if f.get("rating") in (1, -1)]
        d["cached"], d["refused"] = bool(d["cached"]), bool(d["refused"])
        out.append(d)
    return out


def _experiment(row) -> dict[str, Any]:
    name, status, created, stopped, data = row
    return {**json.loads(data), "name": name, "status": status, "created": created, "stopped": stopped}
